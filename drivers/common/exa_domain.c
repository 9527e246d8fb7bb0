// SPDX-License-Identifier: GPL-2.0
/*
 * Protection domains of both NICs (uapi/exa_domain.h): the binding table
 * and the domain of a process that opens a device.
 *
 * An administrator binds a process to a job domain over netlink (the
 * exanet genl family, exanetctl).  When a process opens an ExaNet or
 * EXTOLL device, the driver walks from it up the real_parent chain and
 * uses the domain of the nearest bound ancestor, so a job launcher binds
 * one process and all of its descendants inherit the domain.  A process
 * with no bound ancestor gets the domain of its effective uid, never one
 * shared by all users (unless a driver's opt-in parameter says so).
 *
 * Bindings hold a reference on the thread group's struct pid, so a recycled
 * pid number can never match; the leader's start time is recorded as well
 * and checked as a second line of defence.  Bindings whose process is gone
 * are collected on every bind and on every dump.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/error-injection.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include <linux/cred.h>
#include <linux/module.h>
#include <linux/uidgid.h>

#include "exa_dbg.h"
#include "exa_isolation.h"

/* Upper bound on the table so a buggy admin tool cannot exhaust memory. */
#define EXA_DOMAIN_MAX_BINDINGS	4096
/* The parent walk is bounded too; process trees are never this deep. */
#define EXA_DOMAIN_MAX_ANCESTORS	4096

struct exa_binding {
	struct hlist_node node;
	struct rcu_head rcu;
	struct pid *tgid;	/* referenced */
	u64 start_time;		/* leader's start_boottime */
	u32 domain;
};

static DEFINE_HASHTABLE(exa_bindings, 6);
static DEFINE_MUTEX(exa_bindings_lock);	/* writers */
static unsigned int exa_nbindings;

static void exa_binding_free_rcu(struct rcu_head *head)
{
	struct exa_binding *b = container_of(head, struct exa_binding, rcu);

	put_pid(b->tgid);
	kfree(b);
}

static void exa_binding_remove(struct exa_binding *b)
{
	lockdep_assert_held(&exa_bindings_lock);
	hash_del_rcu(&b->node);
	exa_nbindings--;
	call_rcu(&b->rcu, exa_binding_free_rcu);
}

static struct exa_binding *exa_binding_find(struct pid *tgid)
{
	struct exa_binding *b;

	lockdep_assert_held(&exa_bindings_lock);
	hash_for_each_possible(exa_bindings, b, node, (unsigned long)tgid)
		if (b->tgid == tgid)
			return b;
	return NULL;
}

static bool exa_binding_stale(struct exa_binding *b)
{
	bool stale;

	rcu_read_lock();
	stale = !pid_task(b->tgid, PIDTYPE_TGID);
	rcu_read_unlock();
	return stale;
}

static void exa_bindings_gc(void)
{
	struct exa_binding *b;
	struct hlist_node *tmp;
	unsigned int bkt;

	lockdep_assert_held(&exa_bindings_lock);
	hash_for_each_safe(exa_bindings, bkt, tmp, b, node)
		if (exa_binding_stale(b))
			exa_binding_remove(b);
}

/* Domain of the nearest bound ancestor of current (or current itself). */
static u32 exa_domain_bound(void)
{
	struct task_struct *task, *parent;
	struct exa_binding *b;
	u32 domain = EXA_DOMAIN_NONE;
	unsigned int depth;

	rcu_read_lock();
	task = current->group_leader;
	for (depth = 0; depth < EXA_DOMAIN_MAX_ANCESTORS; depth++) {
		struct pid *tgid = task_tgid(task);

		hash_for_each_possible_rcu(exa_bindings, b, node,
					   (unsigned long)tgid) {
			if (b->tgid == tgid &&
			    b->start_time == task->start_boottime) {
				domain = READ_ONCE(b->domain);
				goto out;
			}
		}
		if (!task->pid)		/* the idle task ends every chain */
			break;
		parent = rcu_dereference(task->real_parent);
		if (!parent || parent == task)
			break;
		task = parent->group_leader;
	}
out:
	rcu_read_unlock();
	return domain;
}

/**
 * exa_domain_of_current - protection domain for a device the caller opens
 * @shared_default: a driver's opt-in domain for every unbound process
 *	(closed single-user systems), 0 for the safe default
 *
 * Return: the domain of the nearest bound ancestor; else @shared_default
 * if set; else the domain of the caller's effective uid (in the initial
 * user namespace); EXA_DOMAIN_NONE if that uid has no domain.
 */
u32 exa_domain_of_current(u32 shared_default)
{
	u32 domain = exa_domain_bound();
	uid_t uid;

	if (domain != EXA_DOMAIN_NONE)
		return domain;
	if (shared_default != EXA_DOMAIN_NONE)
		return shared_default;
	uid = from_kuid(&init_user_ns, current_euid());
	return EXA_DOMAIN_OF_UID(uid);
}
EXPORT_SYMBOL_NS_GPL(exa_domain_of_current, EXA_CORE);

/* Thread group (referenced) and leader start time of pid number @nr. */
static int exa_lookup_tgid(pid_t nr, struct pid **tgid, u64 *start_time)
{
	struct task_struct *task;
	struct pid *pid;
	int ret = -ESRCH;

	if (nr <= 0) {
		exa_pr_dbg("pid %d is not a process id\n", nr);
		return -ESRCH;
	}
	pid = find_get_pid(nr);
	if (!pid) {
		exa_pr_dbg("no pid %d in the caller's namespace\n", nr);
		return -ESRCH;
	}
	rcu_read_lock();
	task = pid_task(pid, PIDTYPE_PID);
	if (task) {
		struct task_struct *leader = task->group_leader;

		*tgid = get_pid(task_tgid(leader));
		*start_time = leader->start_boottime;
		ret = 0;
	}
	rcu_read_unlock();
	put_pid(pid);
	if (ret)
		exa_pr_dbg("pid %d has no task\n", nr);
	return ret;
}

/**
 * exa_domain_bind - bind a process (by pid number, caller's namespace)
 * @nr: pid or tid of any thread of the process
 * @domain: job domain, EXA_DOMAIN_JOB_MIN..EXA_DOMAIN_JOB_MAX
 *
 * Rebinding a bound process replaces its domain; files it already opened
 * keep theirs.
 *
 * Return: 0, -EINVAL for a domain outside the job range, -ESRCH if there
 * is no such process, -ENOSPC if the table is full, -ENOMEM.
 */
int exa_domain_bind(pid_t nr, u32 domain)
{
	struct exa_binding *b, *old;
	int ret;

	if (domain < EXA_DOMAIN_JOB_MIN || domain > EXA_DOMAIN_JOB_MAX) {
		exa_pr_dbg("pid %d: domain %u is not a job domain (%u..%u)\n",
			   nr, domain, EXA_DOMAIN_JOB_MIN, EXA_DOMAIN_JOB_MAX);
		return -EINVAL;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	ret = exa_lookup_tgid(nr, &b->tgid, &b->start_time);
	if (ret) {
		kfree(b);
		return ret;
	}
	b->domain = domain;

	mutex_lock(&exa_bindings_lock);
	exa_bindings_gc();
	old = exa_binding_find(b->tgid);
	if (old) {
		hlist_replace_rcu(&old->node, &b->node);
		call_rcu(&old->rcu, exa_binding_free_rcu);
	} else if (exa_nbindings >= EXA_DOMAIN_MAX_BINDINGS) {
		exa_pr_dbg("pid %d: the table holds %u bindings\n", nr,
			   EXA_DOMAIN_MAX_BINDINGS);
		ret = -ENOSPC;
	} else {
		hash_add_rcu(exa_bindings, &b->node, (unsigned long)b->tgid);
		exa_nbindings++;
	}
	mutex_unlock(&exa_bindings_lock);

	if (ret) {
		put_pid(b->tgid);
		kfree(b);
	}
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_domain_bind, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_domain_bind, ERRNO);

/**
 * exa_domain_unbind - remove the binding of a process
 * @nr: pid or tid of any thread of the process
 *
 * Return: 0, -ESRCH if there is no such process, -ENOENT if it is not bound.
 */
int exa_domain_unbind(pid_t nr)
{
	struct exa_binding *b;
	u64 start_time;
	struct pid *tgid;
	int ret;

	ret = exa_lookup_tgid(nr, &tgid, &start_time);
	if (ret)
		return ret;
	mutex_lock(&exa_bindings_lock);
	b = exa_binding_find(tgid);
	if (b) {
		exa_binding_remove(b);
	} else {
		exa_pr_dbg("pid %d is not bound\n", nr);
		ret = -ENOENT;
	}
	mutex_unlock(&exa_bindings_lock);
	put_pid(tgid);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_domain_unbind, EXA_CORE);

/**
 * exa_domain_for_each - visit bindings visible in the caller's pid namespace
 * @pos: number of bindings already visited (dump cursor), updated
 * @visit: callback; a non-zero return stops the walk without advancing
 * @arg: callback argument
 *
 * Return: 0 when the walk is complete, else the callback's return value.
 */
int exa_domain_for_each(unsigned long *pos, exa_domain_visit_t visit,
			void *arg)
{
	struct exa_binding *b;
	unsigned long idx = 0;
	unsigned int bkt;
	int ret = 0;

	mutex_lock(&exa_bindings_lock);
	if (!*pos)
		exa_bindings_gc();
	hash_for_each(exa_bindings, bkt, b, node) {
		pid_t nr;

		if (idx++ < *pos)
			continue;
		nr = pid_vnr(b->tgid);
		if (nr) {
			ret = visit(arg, nr, b->domain);
			if (ret)
				break;
		}
		(*pos)++;
	}
	mutex_unlock(&exa_bindings_lock);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_domain_for_each, EXA_CORE);

static void __exit exa_domain_exit(void)
{
	struct exa_binding *b;
	struct hlist_node *tmp;
	unsigned int bkt;

	mutex_lock(&exa_bindings_lock);
	hash_for_each_safe(exa_bindings, bkt, tmp, b, node)
		exa_binding_remove(b);
	mutex_unlock(&exa_bindings_lock);
	/* The RCU callbacks live in this module. */
	rcu_barrier();
}
module_exit(exa_domain_exit);

MODULE_DESCRIPTION("ExaNet/EXTOLL shared kernel code: protection domains, per-user and cgroup limits, user memory registration (pin, accounting, IOMMU), torus link view");
MODULE_AUTHOR("ExaNet fabric stack developers");
MODULE_LICENSE("GPL");
