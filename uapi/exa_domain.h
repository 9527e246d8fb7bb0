/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * Protection domains, one numbering for both NICs: the ExaNet NI's PDID
 * and the EXTOLL NIC's protection ID carry the same 16-bit value for a
 * process (Documentation/security.md).
 *
 *   0                  no domain, never valid
 *   1 .. 0x7fff        job domains: only an administrator assigns them
 *                      (netlink, CAP_NET_ADMIN: `exanetctl run --pdid N`);
 *                      inherited by every descendant of the bound process
 *   0x8000 + uid       the domain of an unbound process of user uid, for
 *                      uid 0 .. 0x7ffe: processes of one user reach each
 *                      other out of the box, two users never do
 *   0xffff             the domain of the overflow uid 65534 ("nobody")
 *
 * An unbound process of any other uid has no domain: opening a device
 * fails with EACCES until an administrator binds it to a job domain.
 */
#ifndef _UAPI_EXA_DOMAIN_H
#define _UAPI_EXA_DOMAIN_H

#define EXA_DOMAIN_NONE			0
#define EXA_DOMAIN_JOB_MIN		1
#define EXA_DOMAIN_JOB_MAX		0x7fff
#define EXA_DOMAIN_USER_BASE		0x8000
#define EXA_DOMAIN_USER_UID_MAX		0x7ffe
#define EXA_DOMAIN_OVERFLOW_UID		65534
#define EXA_DOMAIN_OVERFLOW_USER	0xffff
#define EXA_DOMAIN_MAX			0xffff

/* Domain of an unbound process of @uid, EXA_DOMAIN_NONE if it has none. */
#define EXA_DOMAIN_OF_UID(uid)						\
	((uid) <= EXA_DOMAIN_USER_UID_MAX ? EXA_DOMAIN_USER_BASE + (uid) :	\
	 (uid) == EXA_DOMAIN_OVERFLOW_UID ? EXA_DOMAIN_OVERFLOW_USER :	\
	 EXA_DOMAIN_NONE)

#endif /* _UAPI_EXA_DOMAIN_H */
