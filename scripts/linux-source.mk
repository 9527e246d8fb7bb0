# What the build takes from Debian's linux-source-6.1 (Documentation/testing.md),
# extracted once per package version into one cache directory that keeps
# the kernel tree's layout, $(LINUX_SRC_DIR):
#  - the kselftest harness for every C test: kselftest_harness.h and
#    kselftest.h (tests include "kselftest_exa.h" from selftests/lib/, which
#    includes the harness and adds what it lacks);
#  - checkpatch.pl and its data files for make style (scripts/check-style.sh).
#
# KSFT_CFLAGS: the harness compares ASSERT_/EXPECT_ operands as given
# (signed against unsigned warns under -Wextra at every such call) and its
# test wrappers take parameters they do not use, hence the two -Wno-.

LINUX_SRC_TARBALL ?= /usr/src/linux-source-6.1.tar.xz
LINUX_SRC_VER := $(shell dpkg-query -W -f '$${Version}' linux-source-6.1 2>/dev/null)
LINUX_SRC_DIR := $(CACHE)/linux-source-$(or $(LINUX_SRC_VER),none)
LINUX_SRC_FILES := tools/testing/selftests/kselftest_harness.h \
	tools/testing/selftests/kselftest.h scripts/checkpatch.pl scripts/spelling.txt \
	scripts/const_structs.checkpatch
LINUX_SRC_STAMP := $(LINUX_SRC_DIR)/.extracted
KERNEL_CHECKPATCH := $(LINUX_SRC_DIR)/scripts/checkpatch.pl

KSFT_INC := $(LINUX_SRC_DIR)/tools/testing/selftests
KSFT_HDRS := $(LINUX_SRC_STAMP) $(TOP)/selftests/lib/kselftest_exa.h
KSFT_CFLAGS := -isystem $(KSFT_INC) -I$(TOP)/selftests/lib -Wno-sign-compare -Wno-unused-parameter

$(LINUX_SRC_STAMP):
	@test -n "$(LINUX_SRC_VER)" -a -r "$(LINUX_SRC_TARBALL)" || { \
		echo "linux-source: linux-source-6.1 is not installed (run: make deps)" >&2; exit 1; }
	@rm -rf $(LINUX_SRC_DIR).tmp && mkdir -p $(LINUX_SRC_DIR).tmp
	tar -xJf $(LINUX_SRC_TARBALL) -C $(LINUX_SRC_DIR).tmp --strip-components=1 \
		$(addprefix linux-source-6.1/,$(LINUX_SRC_FILES))
	@touch $(LINUX_SRC_DIR).tmp/.extracted
	@rm -rf $(LINUX_SRC_DIR) && mv $(LINUX_SRC_DIR).tmp $(LINUX_SRC_DIR)

.PHONY: linux-source-files
linux-source-files: $(LINUX_SRC_STAMP)
