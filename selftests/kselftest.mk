# The kernel's kselftest harness for every C test (Documentation/testing.md):
# kselftest_harness.h and kselftest.h of Debian's linux-source-6.1 (the
# package that also gives checkpatch.pl), extracted once per package version
# into $(CACHE).  Tests include "kselftest_exa.h" (selftests/lib/), which
# includes the harness and adds what it lacks.
#
# KSFT_CFLAGS: the harness compares ASSERT_/EXPECT_ operands as given
# (signed against unsigned warns under -Wextra at every such call) and its
# test wrappers take parameters they do not use, hence the two -Wno-.

KSFT_TARBALL ?= /usr/src/linux-source-6.1.tar.xz
KSFT_VER := $(shell dpkg-query -W -f '$${Version}' linux-source-6.1 2>/dev/null)
KSFT_INC := $(CACHE)/kselftest-$(or $(KSFT_VER),none)
KSFT_HARNESS := $(KSFT_INC)/kselftest_harness.h
KSFT_HDRS := $(KSFT_HARNESS) $(TOP)/selftests/lib/kselftest_exa.h
KSFT_CFLAGS := -isystem $(KSFT_INC) -I$(TOP)/selftests/lib -Wno-sign-compare -Wno-unused-parameter

$(KSFT_HARNESS):
	@test -n "$(KSFT_VER)" -a -r "$(KSFT_TARBALL)" || { \
		echo "kselftest: linux-source-6.1 is not installed (run: make deps)" >&2; exit 1; }
	@rm -rf $(KSFT_INC).tmp && mkdir -p $(KSFT_INC).tmp
	tar -xJf $(KSFT_TARBALL) -C $(KSFT_INC).tmp --strip-components=4 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h
	@rm -rf $(KSFT_INC) && mv $(KSFT_INC).tmp $(KSFT_INC)

.PHONY: kselftest-headers
kselftest-headers: $(KSFT_HARNESS)
