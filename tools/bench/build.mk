# The guest side of tools/bench/fault-campaign (make check-faults and, as
# run-faults-vm-tests.sh, make check): exanet-fault-campaign, run on every
# node of the campaign's cluster -> $(BUILD)/bin/ (/usr/bin in the node
# image; not packaged).  Its ranks meet over the selftests' out-of-band
# channel (selftests/lib/oob.c), so this fragment comes after
# selftests/build.mk.

CAMPAIGN_DIR := $(TOP)/tools/bench/exanet-fault-campaign
CAMPAIGN_SRCS := $(addprefix $(CAMPAIGN_DIR)/,campaign.c campaign_msg.c campaign_rdma.c \
	campaign_results.c)
CAMPAIGN := $(TOOLS_OUT)/exanet-fault-campaign
ALL_TARGETS += $(CAMPAIGN)

# its end barrier waits on a thread while the mailbox keeps draining
$(CAMPAIGN): $(CAMPAIGN_SRCS) $(CAMPAIGN_DIR)/campaign.h $(ST_LIB_SRCS) $(ST_DIR)/lib/oob.h \
		$(ST_DIR)/lib/exa_util.h $(EXA_GENL_H) $(LIBEXANET_SO) \
		$(LIBEXANET_DIR)/include/libexanet.h $(TOP)/uapi/exanet.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(ST_LIB_CFLAGS) -I$(ST_DIR)/lib -o $@ $(CAMPAIGN_SRCS) $(ST_LIB_SRCS) \
		$(USER_LDFLAGS) $(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) -lpthread
