// SPDX-License-Identifier: GPL-2.0
/*
 * Source-compatibility guarantee of librma2 / libvelo2 headers against
 * /work/shared/spec/extoll-api.md: type sizes, struct layouts, enum values,
 * exported constants (linked from the shared libraries), velo2_mod.h macro
 * results.  Compile-time checks are static_asserts; the same facts are
 * repeated at run time as TAP cases so a report shows them.
 */
#include <assert.h>
#include <stddef.h>
#include <rma2.h>
#include <velo2.h>
#include <velo2_mod.h>

#include "../lib/kselftest_exa.h"

#define SA(x) static_assert(x, #x)

/* 2.2 scalar types */
SA(sizeof(RMA2_Nodeid) == 2 && (RMA2_Nodeid)-1 > 0);
SA(sizeof(RMA2_VPID) == 2 && (RMA2_VPID)-1 > 0);
SA(sizeof(RMA2_Class) == 1 && (RMA2_Class)-1 > 0);
SA(sizeof(RMA2_Port) == sizeof(void *));
SA(sizeof(RMA2_Handle) == sizeof(void *));
/* RMA2_NLA must be exactly uint64_t (clients pass uint64_t*) */
SA(_Generic((RMA2_NLA *)0, uint64_t *: 1, default: 0));
SA(_Generic((RMA2_Nodeid *)0, uint16_t *: 1, default: 0));
SA(_Generic((RMA2_Class *)0, uint8_t *: 1, default: 0));
SA(_Generic((velo2_nodeid_t *)0, uint32_t *: 1, default: 0));
SA(_Generic((velo2_vpid_t *)0, uint32_t *: 1, default: 0));

/* 2.5.1 notification: 16 bytes packed */
SA(sizeof(RMA2_Notification) == 16);
SA(offsetof(RMA2_Notification, word0) == 0);
SA(offsetof(RMA2_Notification, word1) == 8);
SA(sizeof(((RMA2_Notification *)0)->word0.value) == 8);

/* 2.5.3 descriptor: 64 bytes */
SA(sizeof(RMA2_Descriptor) == 64);
SA(offsetof(RMA2_Descriptor, list) == 0);
SA(offsetof(RMA2_Descriptor, handle) == 16);
SA(offsetof(RMA2_Descriptor, reserved0) == 24);
SA(offsetof(RMA2_Descriptor, value) == 32);
SA(offsetof(RMA2_Descriptor, reserved1) == 56);

/* 2.5.4 list head */
SA(sizeof(extoll_list_head_t) == 2 * sizeof(void *));

/* 2.5.2 region (LP64 layout of the driver-package header) */
SA(offsetof(RMA2_Region, list) == 0);
SA(offsetof(RMA2_Region, start) == 16);
SA(offsetof(RMA2_Region, nla) == 24);
SA(offsetof(RMA2_Region, count) == 32);
SA(offsetof(RMA2_Region, offset) == 36);
SA(offsetof(RMA2_Region, end) == 40);
SA(offsetof(RMA2_Region, size) == 48);
SA(offsetof(RMA2_Region, refcount) == 56);
SA(offsetof(RMA2_Region, endpoint) == 64);
SA(offsetof(RMA2_Region, parent) == 72);
SA(sizeof(RMA2_Region) == 80);
SA(_Generic(((RMA2_Region *)0)->nla, unsigned long: 1, default: 0));
SA(_Generic(((RMA2_Region *)0)->size, size_t: 1, default: 0));
SA(_Generic(((RMA2_Region *)0)->refcount, uint64_t: 1, default: 0));
SA(_Generic(((RMA2_Region *)0)->parent, struct _region *: 1, default: 0));

/* 3.3 VELO types */
SA(sizeof(velo2_destination_t) == 4);
SA(_Generic(((velo2_connection_t *)0)->dest.raw, uint32_t: 1, default: 0));
SA(_Generic(((velo2_port_t *)0)->map, void *: 1, default: 0));

/* 2.3 enums (compile time) */
SA(RMA2_SUCCESS == 0 && RMA2_ERR_ERROR == -1 && RMA2_ERR_MLOCKLIMIT == 32);
SA(RMA2_CONN_DEFAULT == 16 && RMA2_CONN_TE == 16 && RMA2_CONN_PHYSICAL == 0);
SA(RMA2_ANY == 15 && RMA2_GETS == 14 && RMA2_PUTS == 7);

struct ev { const char *name; long have, want; };
#define E(n, v) { #n, (long)(n), (long)(v) }

static const struct ev enums[] = {
	E(RMA2_SUCCESS, 0), E(RMA2_ERR_ERROR, -1), E(RMA2_ERR_INV_HANDLE, -2),
	E(RMA2_ERR_INV_PORT, -3), E(RMA2_ERR_INV_VALUE, -4), E(RMA2_ERR_NO_ROUTE, -5),
	E(RMA2_ERR_PORTS_USED, -6), E(RMA2_ERR_NO_MEM, -7), E(RMA2_NO_NOTI, -9),
	E(RMA2_ERR_POLL_EXCEEDED, -10), E(RMA2_ERR_WRONG_ARG, -11), E(RMA2_ERR_NOT_YET, -12),
	E(RMA2_ERR_NO_DESC_MEM, -13), E(RMA2_ERR_NO_MATCH, -15), E(RMA2_ERR_WRONG_CMD, -16),
	E(RMA2_ERR_NO_DEVICE, -17), E(RMA2_ERR_NO_CONNECT, -18),
	E(RMA2_ERR_INVALID_VERSION, -22), E(RMA2_ERR_IOCTL, -23), E(RMA2_ERR_MMAP, -24),
	E(RMA2_ERR_FD, -25), E(RMA2_ERR_MAP, -26), E(RMA2_ERR_DOUBLE_MAP, 27),
	E(RMA2_ERR_NO_TABLE, 28), E(RMA2_ERR_NOT_FREE, 29), E(RMA2_ERR_PART, 30),
	E(RMA2_ERR_ATU, 31), E(RMA2_ERR_MLOCKLIMIT, 32),
	E(RMA2_REQUESTER_NOTIFICATION, 1), E(RMA2_RESPONDER_NOTIFICATION, 2),
	E(RMA2_COMPLETER_NOTIFICATION, 4), E(RMA2_REQCOMPL_NOTIFICATION, 5),
	E(RMA2_RESPCOMPL_NOTIFICATION, 6), E(RMA2_ALL_NOTIFICATIONS, 7),
	E(RMA2_NO_NOTIFICATION, 0),
	E(RMA2_CONN_DEFAULT, 16), E(RMA2_CONN_TC0, 0), E(RMA2_CONN_TC1, 1),
	E(RMA2_CONN_TC2, 2), E(RMA2_CONN_TC3, 3), E(RMA2_CONN_RRA, 4), E(RMA2_CONN_IRQ, 8),
	E(RMA2_CONN_TE, 16), E(RMA2_CONN_PHYSICAL, 0),
	E(RMA2_BT_GET, 0), E(RMA2_QW_GET, 1), E(RMA2_BT_PUT, 2), E(RMA2_QW_PUT, 3),
	E(RMA2_NOTIFICATION_PUT, 5), E(RMA2_IMMEDIATE_PUT, 6), E(RMA2_GET_BT_RSP, 10),
	E(RMA2_GET_QW_RSP, 11), E(RMA2_LOCK_REQ, 12), E(RMA2_LOCK_RSP, 13), E(RMA2_PUTS, 7),
	E(RMA2_GETS, 14), E(RMA2_ANY, 15),
	E(RMA2_CMD_DEFAULT, 0), E(RMA2_CMD_MC, 1), E(RMA2_CMD_NTR, 2), E(RMA2_CMD_ERA, 4),
	E(RMA2_CMD_EWA, 8),
	E(RMA2_NOTI_RRA, 1), E(RMA2_NOTI_IRQ, 2), E(RMA2_NOTI_TE, 4), E(RMA2_NOTI_EWA, 8),
	E(RMA2_NOTI_NTR, 16), E(RMA2_NOTI_ERA, 32),
	E(RMA2_ERROR_REQ, 1), E(RMA2_ERROR_RESP, 2), E(RMA2_ERROR_CMPL, 4),
	E(RMA2_REPLAY_MANUAL, 0), E(RMA2_REPLAY_POST, 1), E(RMA2_REPLAY_NOTI, 2),
	E(RMA2_REPLAY_CLOSE, 4), E(RMA2_REPLAY_ALL, 7),
};

TEST(enum_values)
{
	size_t i;

	for (i = 0; i < sizeof(enums) / sizeof(enums[0]); i++) {
		if (enums[i].have != enums[i].want)
			TH_LOG("%s = %ld, spec says %ld", enums[i].name, enums[i].have,
			       enums[i].want);
		EXPECT_EQ(enums[i].want, enums[i].have);
	}
}

TEST(enum_types_are_typedefs)
{
	/* every enum is a named typedef usable as a parameter/variable type */
	RMA2_ERROR e = RMA2_SUCCESS;
	RMA2_Notification_Spec s = RMA2_ALL_NOTIFICATIONS;
	RMA2_Connection_Options o = (RMA2_Connection_Options)(RMA2_CONN_PHYSICAL | RMA2_CONN_RRA);
	RMA2_Command c = RMA2_QW_PUT;
	RMA2_Command_Modifier m = RMA2_CMD_NTR;
	RMA2_Notification_Modifier nm = RMA2_NOTI_TE;
	RMA2_Notification_Error ne = RMA2_ERROR_CMPL;
	RMA2_Replay_Buffer_Mode r = RMA2_REPLAY_ALL;

	EXPECT_EQ(0, e);
	EXPECT_EQ(7, s);
	EXPECT_EQ(4, o);
	EXPECT_EQ(3, c);
	EXPECT_EQ(2, m);
	EXPECT_EQ(4, nm);
	EXPECT_EQ(4, ne);
	EXPECT_EQ(7, r);
}

TEST(exported_constants)
{
	/* linked objects from librma2.so */
	const RMA2_Class *cls = &RMA2_CLASS_ANY;

	EXPECT_EQ(0xff, *cls);
	EXPECT_EQ(0xffff, RMA2_NODEID_ANY);
	EXPECT_EQ(0xffff, RMA2_VPID_ANY);
	EXPECT_TRUE(RMA2_LOCK_ANY == 0xffffffffu);
	EXPECT_TRUE(RMA2_ANY_NLA == 0xFFFFFFFFFFFFFFFFull);
	EXPECT_EQ(0, RMA2_DEFAULT_FLAG);
	EXPECT_EQ(1, RMA2_BLOCK_FLAG);
	EXPECT_EQ(2, RMA2_MATCH_LAST_NLA_FLAG);
}

TEST(struct_layout)
{
	EXPECT_EQ(16, sizeof(RMA2_Notification));
	EXPECT_EQ(64, sizeof(RMA2_Descriptor));
	EXPECT_EQ(32, offsetof(RMA2_Descriptor, value));
	EXPECT_EQ(24, offsetof(RMA2_Region, nla));
	EXPECT_EQ(80, sizeof(RMA2_Region));
	EXPECT_EQ(4, sizeof(velo2_destination_t));
}

TEST(velo2_destination_union)
{
	velo2_destination_t d;

	d.raw = 0;
	d.nodeid = 0x1234;
	d.vpid = 0x56;
	/* little endian: raw == VELO2_ADDR_PACK(node, vpid) */
	EXPECT_EQ((uint32_t)VELO2_ADDR_PACK(0x1234, 0x56), d.raw);
}

TEST(velo2_ret_codes_distinct)
{
	int codes[] = { VELO2_RET_SUCCESS, VELO2_RET_ERROR, VELO2_RET_NO_MSG, VELO2_RET_NO_MATCH,
			VELO2_RET_ERR_FDOPEN, VELO2_RET_ERR_MMAP, VELO2_RET_INVALID_MBOX,
			VELO2_RET_INVALID_NODE, VELO2_RET_INV_MSG, VELO2_RET_TRY_AGAIN,
			VELO2_RET_INV_MTT };
	size_t i, j, n = sizeof(codes) / sizeof(codes[0]);
	enum velo2_ret tagged = VELO2_RET_SUCCESS;
	velo2_ret_t typed = tagged;

	EXPECT_EQ(0, typed);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			EXPECT_NE(codes[i], codes[j]);
}

TEST(velo2_mod_macros)
{
	uint64_t st = 0;
	unsigned int node = 0, vpid = 0;
	long packed = VELO2_ADDR_PACK(0x1abcd, 0x1ef);

	/* type long, masked fields */
	EXPECT_EQ(sizeof(long), sizeof(VELO2_ADDR_PACK(1, 2)));
	EXPECT_EQ(0xef0000L | 0xabcdL, packed);
	VELO2_ADDR_UNPACK(packed, node, vpid);
	EXPECT_EQ(0xabcd, node);
	EXPECT_EQ(0xef, vpid);
	EXPECT_EQ(0x10000005L, VELO2_MCADDR_PACK(5L));
	EXPECT_EQ((120L << 16) | (0x7fL << 8) | 3L, VELO2_REQUEST_UPPERHEADER(7, 0x7f, 120));
	EXPECT_EQ((0x7fL << 16) | (0xffL << 8) | 3L, VELO2_REQUEST_UPPERHEADER(0xff, 0x1ff, 0xff));
	EXPECT_TRUE((uint64_t)VELO2_REQUEST_HEADER(3, 4, 1, 0x22, 100) ==
		    (((uint64_t)((100 << 16) | (0x22 << 8) | 1) << 32) | (4u << 16) | 3u));

	/* status word: node 0x0102, vpid 0x33, mtt 2, EOM, err, tag 0x44, len 0x78 */
	st = 0x0102ull | (0x33ull << 16) | (2ull << 32) | (1ull << 36) | (1ull << 37) |
	     (0x44ull << 40) | (0x78ull << 48) | (1ull << 31) /* noise */;
	EXPECT_EQ(0x0102, VELO2_STATUS_NODEID(&st));
	EXPECT_EQ(0x33, VELO2_STATUS_VPID(&st));
	EXPECT_EQ(0x330102, VELO2_STATUS_SOURCEID(&st));
	EXPECT_EQ(2, VELO2_STATUS_MTT(&st));
	EXPECT_EQ(0x44, VELO2_STATUS_TAG(&st));
	EXPECT_EQ(0x78, VELO2_STATUS_LENGTH(&st));
	EXPECT_EQ(1, VELO2_STATUS_EOM(&st));
	EXPECT_EQ(1, VELO2_STATUS_ERR(&st));
	st = 0xffull << 48;
	EXPECT_EQ(0x7f, VELO2_STATUS_LENGTH(&st));
}

TEST(limits_macros)
{
	EXPECT_EQ(8388608, RMA2_MAX_SIZE);
	EXPECT_EQ(32, RMA2_RP_LAZYNESS);
	EXPECT_EQ(120, VELO2_MAX_MSG_SIZE);
}

TEST(no_device_errors)
{
	RMA2_Port port = (RMA2_Port)1;
	velo2_port_t vp;
	RMA2_ERROR rc;

	if (access("/dev/extoll/rma2", F_OK) == 0)
		SKIP_TEST("host has /dev/extoll/rma2");
	rc = rma2_open(&port);
	EXPECT_EQ(RMA2_ERR_NO_DEVICE, rc);
	EXPECT_TRUE(port == NULL);
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_open(NULL));
	memset(&vp, 0, sizeof(vp));
	EXPECT_EQ(VELO2_RET_ERR_FDOPEN, velo2_open(&vp));
	EXPECT_TRUE(vp.map == NULL);
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(NULL));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_close(&vp));
}

TEST_HARNESS_MAIN
