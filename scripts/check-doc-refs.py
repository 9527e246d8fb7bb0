#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the documents and code comments name files that exist.

  scripts/check-doc-refs.py      (from the top of the tree; exit 1 on findings)

1. Every name like foo.c, dir/foo.h, bar.md, baz.sh, x.py, y.mk in a
   comment of a tracked source file or in a tracked text file must be a
   tracked file (with a path: a tracked file ending in that path).  Names
   of files outside the tree (system and kernel headers, the original
   EXTOLL sources, examples) are listed in EXTERNAL.
2. Every relative Markdown link of Documentation/, README.md and
   selftests/README.md must point at an existing file.
3. Every document of Documentation/ (*.md, in subdirectories too) is
   reachable from README.md through Markdown links: linked from README.md
   or from a document that is itself reachable.  A name in backquotes is
   not a link a reader can follow.
4. The man pages (man/*.scd) name documents where the exanet-doc package
   installs them, /usr/share/doc/exanet-doc/<path under Documentation/>,
   never by their place in the source tree.
"""
import os
import re
import subprocess
import sys

EXTERNAL = re.compile(r'''^(
    list\.h | kselftest(_harness)?\.h | string\.h | stdio\.h | stdint\.h |
    unistd\.h | sys/.* | rdma/f.* | ompi/.* | opal_config\.h |
    kernel/.* | target/.* | exec/.* | hw/.* | /usr/.* | usr/include/.* |
    (/work/shared/)?spec/extoll-api\.md | velo2_ioctl\.h | extoll_pp_velo\.c |
    tests/(illegal_cmd|simple_lock)\.c | /tmp/.* |
    prog\.c | hello\.c | app\.c | \.mod\.c | -dead\.c | vm-tests\.sh |
    runfabtests\.sh
)$''', re.X)
NAME = re.compile(r'(?<![\w.-])([A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.(?:c|h|py|sh|md|mk))\b')
SCRIPT_DIRS = ('tools/bench/', 'tools/cluster/', '.ci/')


def text_to_check(path, text):
    """(line, text) pieces of path whose file names count."""
    if path.endswith('.patch'):     # names files of the tree it applies to (QEMU's)
        return []
    if path.endswith(('.c', '.h')):
        return [(text.count('\n', 0, m.start()) + 1, m.group(0))
                for m in re.finditer(r'/\*.*?\*/|//[^\n]*', text, re.S)]
    base = os.path.basename(path)
    if (path.endswith(('.py', '.sh', '.mk')) or base in ('Makefile', 'Kbuild')
            or path.startswith(SCRIPT_DIRS)):
        return [(i, line[line.index('#'):])
                for i, line in enumerate(text.split('\n'), 1) if '#' in line]
    return list(enumerate(text.split('\n'), 1))


def md_links(doc):
    """The relative link targets of Markdown file doc, as tree paths."""
    targets = []
    for m in re.finditer(r'\]\(([^)#\s]+)(#[^)]*)?\)', open(doc).read()):
        if not re.match(r'[a-z]+:', m.group(1)):
            targets.append(os.path.normpath(os.path.join(os.path.dirname(doc), m.group(1))))
    return targets


def unreachable_docs(files):
    """Documents of Documentation/ that no chain of links from README.md reaches."""
    reached, todo = {'README.md'}, ['README.md']
    while todo:
        for target in md_links(todo.pop()):
            if target.endswith('.md') and target not in reached and os.path.isfile(target):
                reached.add(target)
                todo.append(target)
    return sorted(f for f in files if f.startswith('Documentation/') and f.endswith('.md')
                  and f not in reached)


DOC_DIR = '/usr/share/doc/exanet-doc/'


def man_page_doc_refs(files):
    """Findings: documents a man page names by source path or that do not exist."""
    findings = []
    for page in (f for f in files if f.startswith('man/') and f.endswith('.scd')):
        for i, line in enumerate(open(page, encoding='utf-8'), 1):
            if re.search(r'(?<![A-Za-z0-9/])Documentation/', line):
                findings.append(f'{page}:{i}: a source path: name {DOC_DIR}<file> instead')
            for m in re.finditer(re.escape(DOC_DIR) + r'([\w./-]+\.(?:md|png))', line):
                if 'Documentation/' + m.group(1) not in files:
                    findings.append(f'{page}:{i}: exanet-doc has no {m.group(1)}')
    return findings


def main():
    files = subprocess.check_output(['git', 'ls-files'], text=True).split()
    names = {os.path.basename(f) for f in files}
    findings = []
    for path in files:
        if path == 'scripts/check-doc-refs.py' or not os.path.isfile(path):
            continue
        try:
            text = open(path, encoding='utf-8').read()
        except (UnicodeDecodeError, OSError):
            continue
        for line, chunk in text_to_check(path, text):
            for m in NAME.finditer(chunk):
                name = m.group(1)
                if EXTERNAL.match(name):
                    continue
                if os.path.basename(name) in names and (
                        '/' not in name or
                        any(f.endswith(name.lstrip('./')) for f in files)):
                    continue
                findings.append(f'{path}:{line}: no such file: {name}')
    docs = [f for f in files if f.endswith('.md') and
            (f.startswith('Documentation/') or f in ('README.md', 'selftests/README.md'))]
    for doc in docs:
        for target in md_links(doc):
            if not os.path.exists(target):
                findings.append(f'{doc}: broken link: {os.path.relpath(target, os.path.dirname(doc))}')
    findings += man_page_doc_refs(files)
    for doc in unreachable_docs(files):
        findings.append(f'{doc}: not linked from README.md or from a document linked from it')
    print('\n'.join(findings))
    print(f'check-doc-refs: {len(findings)} finding(s)')
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main())
