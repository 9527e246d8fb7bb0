#!/bin/sh
# Print the release of the Debian bookworm kernel the guests run (the one
# linux-image-amd64 pulls in), e.g. 6.1.0-56-amd64.
dep=$(dpkg-query -W -f '${Depends}' linux-image-amd64 2>/dev/null | sed -n 's/.*linux-image-\([0-9][^ ,]*-amd64\).*/\1/p')
if [ -z "$dep" ]; then
	dep=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -n1 | sed 's|.*/linux-headers-||')
fi
[ -n "$dep" ] || { echo "kver.sh: no Debian 6.1 amd64 kernel installed (run: make deps)" >&2; exit 1; }
echo "$dep"
