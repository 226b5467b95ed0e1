# SPDX-License-Identifier: BSD-3-Clause
# lib/grad: gradients for training (doc/gradients.md), each backward file
# named after the forward it differentiates.  Precision-generic.
GENERIC_SOURCES += lib/grad/features_grad.c lib/grad/grad_util.c \
	lib/grad/attention_grad.c lib/grad/causal_grad.c \
	lib/grad/batched_grad.c
INTERNAL_H += lib/grad/grad.h
