/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exp2_table.h -- 2^(j/64), j = 0..63, correctly rounded (bit patterns),
 * for the table-driven exponentials of the AVX2 and AVX-512 builds: the
 * AVX2 one takes every entry, the AVX-512 one the even ones (2^(j/32)).
 * LINATTN_EXP2_J64(even, odd) expands to even(entry j) for even j and
 * odd(entry j) for odd j, in order.
 */
#ifndef LINATTN_EXP2_TABLE_H
#define LINATTN_EXP2_TABLE_H

#define LINATTN_EXP2_J64(even, odd) \
    even(0x3ff0000000000000ull) odd(0x3ff02c9a3e778061ull) \
    even(0x3ff059b0d3158574ull) odd(0x3ff0874518759bc8ull) \
    even(0x3ff0b5586cf9890full) odd(0x3ff0e3ec32d3d1a2ull) \
    even(0x3ff11301d0125b51ull) odd(0x3ff1429aaea92de0ull) \
    even(0x3ff172b83c7d517bull) odd(0x3ff1a35beb6fcb75ull) \
    even(0x3ff1d4873168b9aaull) odd(0x3ff2063b88628cd6ull) \
    even(0x3ff2387a6e756238ull) odd(0x3ff26b4565e27cddull) \
    even(0x3ff29e9df51fdee1ull) odd(0x3ff2d285a6e4030bull) \
    even(0x3ff306fe0a31b715ull) odd(0x3ff33c08b26416ffull) \
    even(0x3ff371a7373aa9cbull) odd(0x3ff3a7db34e59ff7ull) \
    even(0x3ff3dea64c123422ull) odd(0x3ff4160a21f72e2aull) \
    even(0x3ff44e086061892dull) odd(0x3ff486a2b5c13cd0ull) \
    even(0x3ff4bfdad5362a27ull) odd(0x3ff4f9b2769d2ca7ull) \
    even(0x3ff5342b569d4f82ull) odd(0x3ff56f4736b527daull) \
    even(0x3ff5ab07dd485429ull) odd(0x3ff5e76f15ad2148ull) \
    even(0x3ff6247eb03a5585ull) odd(0x3ff6623882552225ull) \
    even(0x3ff6a09e667f3bcdull) odd(0x3ff6dfb23c651a2full) \
    even(0x3ff71f75e8ec5f74ull) odd(0x3ff75feb564267c9ull) \
    even(0x3ff7a11473eb0187ull) odd(0x3ff7e2f336cf4e62ull) \
    even(0x3ff82589994cce13ull) odd(0x3ff868d99b4492edull) \
    even(0x3ff8ace5422aa0dbull) odd(0x3ff8f1ae99157736ull) \
    even(0x3ff93737b0cdc5e5ull) odd(0x3ff97d829fde4e50ull) \
    even(0x3ff9c49182a3f090ull) odd(0x3ffa0c667b5de565ull) \
    even(0x3ffa5503b23e255dull) odd(0x3ffa9e6b5579fdbfull) \
    even(0x3ffae89f995ad3adull) odd(0x3ffb33a2b84f15fbull) \
    even(0x3ffb7f76f2fb5e47ull) odd(0x3ffbcc1e904bc1d2ull) \
    even(0x3ffc199bdd85529cull) odd(0x3ffc67f12e57d14bull) \
    even(0x3ffcb720dcef9069ull) odd(0x3ffd072d4a07897cull) \
    even(0x3ffd5818dcfba487ull) odd(0x3ffda9e603db3285ull) \
    even(0x3ffdfc97337b9b5full) odd(0x3ffe502ee78b3ff6ull) \
    even(0x3ffea4afa2a490daull) odd(0x3ffefa1bee615a27ull) \
    even(0x3fff50765b6e4540ull) odd(0x3fffa7c1819e90d8ull)

/* Arguments of LINATTN_EXP2_J64: an entry of the initializer, or none. */
#define LINATTN_EXP2_TAKE(bits) bits,
#define LINATTN_EXP2_SKIP(bits)

#endif
