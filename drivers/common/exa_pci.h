/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PCI helpers shared by the ExaNet and EXTOLL drivers (header only: too
 * small to be worth an exported symbol).
 */
#ifndef _EXA_PCI_H
#define _EXA_PCI_H

#include <linux/pci.h>

/* A device model of another revision must not be driven past its BARs. */
static inline int exa_pci_check_bar(struct pci_dev *pdev, int bar,
				    resource_size_t size)
{
	if (!(pci_resource_flags(pdev, bar) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, bar) < size) {
		dev_err(&pdev->dev, "BAR%d missing or smaller than %#llx\n",
			bar, (unsigned long long)size);
		return -ENODEV;
	}
	return 0;
}

#endif /* _EXA_PCI_H */
