# SPDX-License-Identifier: BSD-3-Clause
# lib/attn: the problems and their paths -- plans, the additive state and
# its streaming calls, non-causal and causal attention, the quadratic
# baselines, batches, writing output rows, and the errors of the
# approximations against softmax.  Precision-generic (common/prec.h).
GENERIC_SOURCES += lib/attn/plan.c lib/attn/fingerprint.c \
	lib/attn/state.c lib/attn/state_small.c lib/attn/state_transfer.c \
	lib/attn/state_causal.c lib/attn/output_rows.c lib/attn/attention.c \
	lib/attn/causal.c lib/attn/naive.c lib/attn/batched.c \
	lib/attn/checks.c lib/attn/approx_error.c
INTERNAL_H += lib/attn/plan.h lib/attn/state.h lib/attn/output_rows.h \
	lib/attn/paths.h
