// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: interrupts, so that a process can sleep until its NI
 * has something for it.
 *
 * The NI has MSI-X vectors (IRQ_CAPS) and one-shot interrupt sources: every
 * mailbox and every RDMA rank.  EXANET_IOC_EVENT_ARM arms the sources a file
 * owns with the file's vector and remembers, per source, which file armed
 * it last (mbox_armed[], rank_armed[]; an entry stays until the source
 * changes hands, so a handler that runs late never meets an entry taken
 * away by a re-arm in between).  When a source fires, the NI disarms it,
 * sets its bit in a write-1-to-clear PENDING register and raises the vector;
 * the handler clears what it read, counts an event for the file of each
 * pending source and wakes its wait queue, so poll() reports EPOLLIN until
 * the next arm.  The arm returns the count, including sources that fired
 * but whose interrupt was not handled yet (an event between two arms is
 * never lost to a caller that checks it).
 *
 * Lifetime: a file is in the tables only while it is open; release takes it
 * out under irq_lock, which the handler holds while it looks at a file, so
 * the handler never sees a freed file.  Device removal marks the device
 * dead, resets the NI (every source disarmed), empties the tables, wakes
 * every open file (poll: EPOLLERR | EPOLLHUP) and only then frees the
 * vectors (free_irq() waits for a running handler).
 *
 * Locking: edev->lock (mutex, outer) -> edev->irq_lock (spinlock, irq-safe)
 * -> the files' wait queue locks.  The handler takes only irq_lock.
 */

#include <linux/bitops.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/uaccess.h>

#include "exanet_drv.h"

/* irq_lock held: the file has an event; wake whoever sleeps on it. */
static void exanet_ev_signal(struct exanet_drv_dev *edev, struct exanet_drv_file *ef)
{
	lockdep_assert_held(&edev->irq_lock);
	if (!ef)
		return;
	WRITE_ONCE(ef->ev_count, ef->ev_count + 1);
	atomic64_inc(&edev->irq_wakeups);
	wake_up_interruptible_poll(&ef->ev_wq, EPOLLIN | EPOLLRDNORM);
}

static irqreturn_t exanet_irq_handler(int irq, void *data)
{
	struct exanet_drv_dev *edev = data;
	DECLARE_BITMAP(mbox, EXANET_NUM_MBOX_IFACES);
	unsigned long rank;
	unsigned int bit;
	u64 pending;

	/* Clear exactly what we read: a later event brings its own MSI. */
	pending = readq(edev->ctrl + EXANET_REG_IRQ_MBOX_PENDING);
	rank = readl(edev->ctrl + EXANET_REG_IRQ_RANK_PENDING);
	if (pending)
		writeq(pending, edev->ctrl + EXANET_REG_IRQ_MBOX_PENDING);
	if (rank)
		writel(rank, edev->ctrl + EXANET_REG_IRQ_RANK_PENDING);
	atomic64_inc(&edev->irq_count);
	bitmap_from_u64(mbox, pending);

	spin_lock(&edev->irq_lock);
	for_each_set_bit(bit, mbox, EXANET_NUM_MBOX_IFACES)
		exanet_ev_signal(edev, edev->mbox_armed[bit]);
	for_each_set_bit(bit, &rank, EXANET_RDMA_NUM_RANKS)
		exanet_ev_signal(edev, edev->rank_armed[bit]);
	if (pending)
		exanet_ip_irq(edev, pending);
	spin_unlock(&edev->irq_lock);
	/* On-demand paging: faults wait in the fault queue (exanet_odp.c). */
	if (rank & BIT(EXANET_IRQ_RANK_FAULT))
		queue_work(system_unbound_wq, &edev->fault_work);
	/*
	 * Never IRQ_NONE: with several vectors another handler may already
	 * have consumed the bits this MSI was sent for.
	 */
	return IRQ_HANDLED;
}

/*
 * Probe, after the NI reset: MSI-X vectors if the NI has interrupts.  No
 * interrupts (older NI, msix=off, MSI-X unavailable) is not an error:
 * nvec stays 0 and EVENT_ARM answers -EOPNOTSUPP.
 */
void exanet_irq_probe(struct exanet_drv_dev *edev)
{
	struct pci_dev *pdev = edev->pdev;
	u32 want = EXANET_IRQ_CAPS_VECTORS(exanet_rd(edev, EXANET_REG_IRQ_CAPS));
	int nvec, v, ret;

	edev->nvec = 0;
	want = min_t(u32, want, EXANET_NUM_IRQ_VECTORS);
	if (!want || !pdev->msix_cap) {
		dev_info(&pdev->dev, "%s: no interrupts (no MSI-X): poll only\n",
			 dev_name(&edev->dev));
		return;
	}
	nvec = pci_alloc_irq_vectors(pdev, 1, want, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_warn(&pdev->dev, "%s: MSI-X unavailable (%d): poll only\n",
			 dev_name(&edev->dev), nvec);
		return;
	}
	for (v = 0; v < nvec; v++) {
		snprintf(edev->irq_name[v], sizeof(edev->irq_name[v]), "%s-ev%d",
			 dev_name(&edev->dev), v);
		ret = request_irq(pci_irq_vector(pdev, v), exanet_irq_handler, 0,
				  edev->irq_name[v], edev);
		if (ret) {
			dev_warn(&pdev->dev, "%s: vector %d: %d: poll only\n",
				 dev_name(&edev->dev), v, ret);
			while (v--)
				free_irq(pci_irq_vector(pdev, v), edev);
			pci_free_irq_vectors(pdev);
			return;
		}
	}
	edev->nvec = nvec;
	dev_info(&pdev->dev, "%s: %d MSI-X vectors\n", dev_name(&edev->dev),
		 nvec);
}

/* Removal (after exanet_irq_quiesce()) or a failed probe. */
void exanet_irq_remove(struct exanet_drv_dev *edev)
{
	u32 v;

	for (v = 0; v < edev->nvec; v++)
		free_irq(pci_irq_vector(edev->pdev, v), edev);
	if (edev->nvec)
		pci_free_irq_vectors(edev->pdev);
	WRITE_ONCE(edev->nvec, 0);
}

/*
 * edev->lock held, the device just marked dead and reset (nothing armed):
 * forget every armed source and wake every open file, whose poll now
 * reports EPOLLERR | EPOLLHUP.
 */
void exanet_irq_quiesce(struct exanet_drv_dev *edev)
{
	struct exanet_drv_file *ef;

	lockdep_assert_held(&edev->lock);
	spin_lock_irq(&edev->irq_lock);
	memset(edev->mbox_armed, 0, sizeof(edev->mbox_armed));
	memset(edev->rank_armed, 0, sizeof(edev->rank_armed));
	list_for_each_entry(ef, &edev->files, irq_node)
		wake_up_interruptible_poll(&ef->ev_wq, EPOLLERR | EPOLLHUP);
	spin_unlock_irq(&edev->irq_lock);
}

void exanet_irq_file_open(struct exanet_drv_dev *edev, struct exanet_drv_file *ef)
{
	u32 nvec = READ_ONCE(edev->nvec);	/* 0 from a removal on */

	init_waitqueue_head(&ef->ev_wq);
	ef->vec = nvec ? (u32)atomic_inc_return(&edev->next_vec) % nvec : 0;
	spin_lock_irq(&edev->irq_lock);
	list_add_tail(&ef->irq_node, &edev->files);
	spin_unlock_irq(&edev->irq_lock);
}

/*
 * Release, before the file's interfaces and rank are given back: from now
 * on no interrupt reaches this file.  Nobody can sleep on it any more (a
 * poller holds a file reference; epoll let go of it before release).
 */
void exanet_irq_file_release(struct exanet_drv_file *ef)
{
	struct exanet_drv_dev *edev = ef->edev;
	u32 i;

	spin_lock_irq(&edev->irq_lock);
	for (i = 0; i < EXANET_NUM_MBOX_IFACES; i++)
		if (edev->mbox_armed[i] == ef)
			edev->mbox_armed[i] = NULL;
	for (i = 0; i < EXANET_RDMA_NUM_RANKS; i++)
		if (edev->rank_armed[i] == ef)
			edev->rank_armed[i] = NULL;
	list_del(&ef->irq_node);
	spin_unlock_irq(&edev->irq_lock);
}

/* edev->lock held: mailbox m is being freed (already disabled). */
void exanet_irq_mbox_forget(struct exanet_drv_dev *edev, u32 m)
{
	lockdep_assert_held(&edev->lock);
	if (!edev->nvec)
		return;
	exanet_wr(edev, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_IRQ, 0);
	spin_lock_irq(&edev->irq_lock);
	edev->mbox_armed[m] = NULL;
	spin_unlock_irq(&edev->irq_lock);
}

/* ---------------------------------------------------------------- ioctl */

int exanet_ioctl_event_arm(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	DECLARE_BITMAP(mask, EXANET_NUM_MBOX_IFACES);
	struct exanet_event_arm req;
	u32 rank = EXANET_RDMA_NO_RANK, rpend = 0;
	unsigned int m;
	u64 mask64 = 0, pend;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if ((req.flags & ~EXANET_EVENT_FLAGS) || req.reserved ||
	    (!req.flags && !req.mbox_mask)) {
		exanet_dbg(edev, "bad flags %#x or reserved fields\n",
			   req.flags);
		return -EINVAL;
	}
	if ((req.flags & EXANET_EVENT_ALL_MBOX) && req.mbox_mask) {
		exanet_dbg(edev, "ALL_MBOX with a mailbox mask\n");
		return -EINVAL;
	}

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	/* Set at probe, cleared at removal (after dead): stable here. */
	if (!edev->nvec) {
		exanet_dbg(edev, "the NI has no interrupts\n");
		ret = -EOPNOTSUPP;
		goto unlock;
	}
	if (req.flags & EXANET_EVENT_ALL_MBOX) {
		for (m = 0; m < edev->num_mbox; m++)
			if (edev->mbox[m].owner == ef && !edev->mbox[m].kernel)
				mask64 |= BIT_ULL(m);
		bitmap_from_u64(mask, mask64);
	} else {
		mask64 = req.mbox_mask;
		bitmap_from_u64(mask, mask64);
		if (edev->num_mbox < 64 && mask64 >> edev->num_mbox) {
			exanet_dbg(edev, "mailbox mask %#llx beyond %u mailboxes\n",
				   mask64, edev->num_mbox);
			ret = -EINVAL;
			goto unlock;
		}
		for_each_set_bit(m, mask, EXANET_NUM_MBOX_IFACES) {
			if (edev->mbox[m].owner != ef) {
				exanet_dbg(edev, "mailbox %u is %s\n",
					   m, edev->mbox[m].owner ?
					   "another file's" : "not allocated");
				ret = edev->mbox[m].owner ? -EACCES : -EINVAL;
				goto unlock;
			}
			if (edev->mbox[m].kernel) {
				exanet_dbg(edev, "mailbox %u is the kernel path's\n", m);
				ret = -EBUSY;
				goto unlock;
			}
		}
	}
	if (req.flags & EXANET_EVENT_RDMA)
		rank = exanet_file_rank(ef);
	if (!mask64 && rank == EXANET_RDMA_NO_RANK) {
		exanet_dbg(edev, "the file has nothing to arm\n");
		ret = -ENOENT;
		goto unlock;
	}

	/*
	 * Events since the previous arm: those the handler counted, plus our
	 * sources that fired but whose interrupt was not handled yet (taken
	 * here; the handler then finds the bit clear).  Then the table, then
	 * the device: an interrupt right after the arm finds the file.
	 */
	spin_lock_irq(&edev->irq_lock);
	pend = readq(edev->ctrl + EXANET_REG_IRQ_MBOX_PENDING) & mask64;
	if (rank != EXANET_RDMA_NO_RANK)
		rpend = exanet_rd(edev, EXANET_REG_IRQ_RANK_PENDING) & BIT(rank);
	if (pend)
		writeq(pend, edev->ctrl + EXANET_REG_IRQ_MBOX_PENDING);
	if (rpend)
		exanet_wr(edev, EXANET_REG_IRQ_RANK_PENDING, rpend);
	req.events = ef->ev_count;
	for_each_set_bit(m, mask, EXANET_NUM_MBOX_IFACES) {
		if ((pend & BIT_ULL(m)) && edev->mbox_armed[m] == ef)
			req.events++;
		edev->mbox_armed[m] = ef;
	}
	if (rank != EXANET_RDMA_NO_RANK) {
		if (rpend && edev->rank_armed[rank] == ef)
			req.events++;
		edev->rank_armed[rank] = ef;
	}
	WRITE_ONCE(ef->ev_count, 0);
	spin_unlock_irq(&edev->irq_lock);
	for_each_set_bit(m, mask, EXANET_NUM_MBOX_IFACES)
		exanet_wr(edev, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_IRQ,
			  EXANET_IRQ_ARM(ef->vec));
	if (rank != EXANET_RDMA_NO_RANK)
		exanet_wr(edev, EXANET_REG_CTX_BASE(rank) + EXANET_CTX_IRQ,
			  EXANET_IRQ_ARM(ef->vec));
unlock:
	mutex_unlock(&edev->lock);
	if (ret)
		return ret;

	req.mbox_mask = mask64;
	req.rank = rank;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer (the sources stay armed)\n");
		return -EFAULT;
	}
	return 0;
}

/* ------------------------------------------------------ poll and flush */

/*
 * EPOLLIN: an event since the last arm.  EPOLLERR | EPOLLHUP: the device
 * is gone.  EPOLLERR: the NI has no interrupts, or the caller is not the
 * process that opened the file.
 */
__poll_t exanet_poll(struct file *file, poll_table *wait)
{
	struct exanet_drv_file *ef = file->private_data;
	struct exanet_drv_dev *edev = ef->edev;

	poll_wait(file, &ef->ev_wq, wait);
	if (READ_ONCE(edev->dead))
		return EPOLLERR | EPOLLHUP;
	if (!edev->nvec || current->mm != ef->mm) {
		exanet_dbg(edev, "EPOLLERR: %s\n", edev->nvec ?
			   "not the opener's address space" : "the NI has no interrupts");
		return EPOLLERR;
	}
	return READ_ONCE(ef->ev_count) ? EPOLLIN | EPOLLRDNORM : 0;
}

/*
 * close() by the opening process (not by an exiting or exec'ing child that
 * inherited the descriptor): wake the file's sleepers, which would
 * otherwise sleep on until an event or their timeout because they hold a
 * reference on the file.  A poll() on the closed descriptor then reports
 * POLLNVAL; a poll on another descriptor of the file sees an event.
 */
int exanet_flush(struct file *file, fl_owner_t id)
{
	struct exanet_drv_file *ef = file->private_data;
	struct exanet_drv_dev *edev = ef->edev;

	if (current->mm != ef->mm)
		return 0;
	spin_lock_irq(&edev->irq_lock);
	if (wq_has_sleeper(&ef->ev_wq))
		exanet_ev_signal(edev, ef);
	spin_unlock_irq(&edev->irq_lock);
	return 0;
}

/* ---------------------------------------------------------------- sysfs */

static ssize_t irq_vectors_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(edev->nvec));
}
static DEVICE_ATTR_RO(irq_vectors);

static ssize_t irq_count_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&edev->irq_count));
}
static DEVICE_ATTR_RO(irq_count);

static ssize_t irq_wakeups_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&edev->irq_wakeups));
}
static DEVICE_ATTR_RO(irq_wakeups);

/* Sources armed in the NI right now (armed and not fired yet). */
static ssize_t irq_armed_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);
	u32 i, n = 0;

	mutex_lock(&edev->lock);
	if (!edev->dead && edev->nvec) {
		for (i = 0; i < edev->num_mbox; i++)
			n += exanet_rd(edev, EXANET_REG_MBOX_BASE(i) +
				       EXANET_MBOX_IRQ) & EXANET_IRQ_ARMED;
		for (i = 0; i < EXANET_RDMA_NUM_RANKS; i++)
			n += exanet_rd(edev, EXANET_REG_CTX_BASE(i) +
				       EXANET_CTX_IRQ) & EXANET_IRQ_ARMED;
	}
	mutex_unlock(&edev->lock);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(irq_armed);

/* The NI's own count of interrupts raised (IRQ_COUNT, 32 bits). */
static ssize_t irq_raised_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);
	u32 n = 0;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		mutex_unlock(&edev->lock);
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	if (edev->nvec)
		n = exanet_rd(edev, EXANET_REG_IRQ_COUNT);
	mutex_unlock(&edev->lock);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(irq_raised);

static struct attribute *exanet_irq_attrs[] = {
	&dev_attr_irq_vectors.attr,
	&dev_attr_irq_count.attr,
	&dev_attr_irq_wakeups.attr,
	&dev_attr_irq_armed.attr,
	&dev_attr_irq_raised.attr,
	NULL,
};

const struct attribute_group exanet_irq_group = {
	.attrs = exanet_irq_attrs,
};
