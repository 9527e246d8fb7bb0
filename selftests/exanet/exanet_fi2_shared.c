// SPDX-License-Identifier: GPL-2.0
/*
 * exanet_fi2: the cases the provider "extoll" runs too (extoll_fi); their
 * bodies are in selftests/lib/fi_test.h.
 */
#include "exanet_fi2.h"

#include "../lib/fi_cases.h"
