#version 450
// A copy whose source has unit stride along rows (a transposed view: x.T, Linear's w read as
// (K, N)): out[b, r, c] = a[b, r, c] for (B, R, C) views, element words of W_TS. Each workgroup
// moves 32x32 tiles through shared memory, so that the reads (down columns of the output, along
// the source's unit stride) and the writes (along rows) are both coalesced; the generic strided
// copy (cast.comp) reads one element per 32-byte sector here. Strides and offsets in elements:
// pc.st[0..2] the output's, pc.st[MAXD..MAXD+2] the source's; pc.shape = (B, R, C). W_TC is
// the word's 32- or 64-bit twin (shared memory holds no 16-bit words without another extension).
#include "../common.glsl"

layout(set = 0, binding = 0) writeonly buffer O { W_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { W_TS a[]; };

shared W_TC tile[32][33];   // [column][row]: the padding keeps both passes off bank conflicts

void main() {
    int R = pc.shape[1], C = pc.shape[2];
    int tr = (R + 31) / 32, tc = (C + 31) / 32;
    uint tiles = uint(pc.shape[0] * tr * tc);
    int tx = int(gl_LocalInvocationID.x) & 31, ty = int(gl_LocalInvocationID.x) >> 5;
    for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x) {
        int b = int(t) / (tr * tc), rest = int(t) - b * tr * tc;
        int r0 = rest / tc * 32, c0 = (rest - rest / tc * tc) * 32;
        int src = pc.off[1] + b * pc.st[MAXD];
        for (int j = 0; j < 32; j += 8) {   // read down the source's unit-stride rows
            int r = r0 + tx, c = c0 + ty + j;
            if (r < R && c < C)
                tile[ty + j][tx] = W_TC(a[src + r * pc.st[MAXD + 1] + c * pc.st[MAXD + 2]]);
        }
        barrier();
        int dst = pc.off[0] + b * pc.st[0];
        for (int j = 0; j < 32; j += 8) {   // write along the output's rows
            int r = r0 + ty + j, c = c0 + tx;
            if (r < R && c < C)
                o[dst + r * pc.st[1] + c * pc.st[2]] = W_TS(tile[tx][ty + j]);
        }
        barrier();   // the tile is refilled by the next iteration
    }
}
