/*
 * amx_cfg.h — the 64-byte tile configuration that LDTILECFG reads (Intel SDM vol. 1,
 * "Intel AMX", tile configuration; vol. 2, LDTILECFG): palette 1 has 8 tiles, each up to
 * 16 rows of up to 64 bytes. Shared by the tile kernel (kernels/x86/gemm_amx.c) and the
 * C model of the tile instructions (amx_model.h).
 */
#ifndef JEPA_KERNELS_X86_AMX_CFG_H
#define JEPA_KERNELS_X86_AMX_CFG_H

#include <stdint.h>

struct jk_tilecfg {
    uint8_t palette;        /* 1; 0 releases the tiles */
    uint8_t start_row;      /* 0 (set by the hardware when a tile load is interrupted) */
    uint8_t reserved[14];   /* 0 */
    uint16_t colsb[16];     /* bytes per row of tile t (tiles 8..15: 0) */
    uint8_t rows[16];       /* rows of tile t (tiles 8..15: 0) */
};
_Static_assert(sizeof(struct jk_tilecfg) == 64, "LDTILECFG reads 64 bytes");

#endif
