"""int4 GEMV on the tensor cores: tinygemm's packed words are `mma.m16n8k16` A fragments as they lie in memory.

Idea: every `lop3*` kernel spends most of its instructions after the decode: fp16x2 products, their conversion to
fp32 and the sums across a row's words and threads (`lop3_f16_bn256_sk16`: 876 SASS instructions per thread per
group, 3.4 per nibble). tinygemm's layout was made for the tensor cores. Its word at [n // 8, ko, lane, j] holds, for
row lane // 4 of an 8-row n-tile, the k values 32 j + 2 (lane % 4) + 8 (p % 4) + p // 4 of nibble p: nibbles a and
a + 4 are adjacent k, at k = 2 (lane % 4) (a even) or + 8 (a odd) of k-tile 2 j + a // 2 (16 k each). That is the
A fragment of `mma.sync.m16n8k16.row.col` (a0: row lane // 4, k = 2 (lane % 4) + {0, 1}; a2: k + 8; a1 and a3: row
+ 8), with two n-tiles as A's 16 rows. So one warp loads an n-tile's 512 bytes of a k-outer tile with one 16-byte
load per lane, and each lane decodes its own words:
- decode (per word: 3 shifts, 4 `lop3`): `lop3(w >> 4a, 0x000F000F, 0x43004300)` is the bf16x2 pair (128 + q,
  128 + q'), exact; no subtraction: the 128 + 8 offset is taken out once per row and group (below);
- B is x: every column of B is x, so every column of D is the rows' dot and a lane gets its row of each n-tile in
  d0 (= d1) and d2 (= d3). x needs no conversion: its bf16 pairs are the B registers. The lane loads its 16 pairs
  of a 128-k chunk itself, inside the asm (pair 16 j + 4 a + lane % 4);
- the 8 mmas of a lane's 4 words are chained in fp32; products of bf16 x and 128 + q are exact, so the only
  rounding is the fp32 accumulation (tinygemm rounds each dequantized weight to bf16);
- per group, a second asm block loads the two rows' scale/zero words and applies acc += scale * dot + (zero - 136
  scale) * sum(x over the group) in fp32.
Half the lanes' results repeat the other half, and 7/8 of D's columns repeat column 0: the tensor cores have the
throughput to spare (8 mmas per 8 words per lane).

Layout: the fragments are only right when the tensor element of lane L sits in hardware lane L. Triton chooses the
layout: the words load as [n-tile pairs, 128] (column 4 lane + j), x and the scale/zero words are loaded inside the
asm blocks, and the tile is reduced to its rows before the store, so the words' coalesced layout (sizePerThread
[1, 4], threadsPerWarp [1, 32]) is the only one on offer; the sm_90 compile shows it for Triton 3.6 (the H200's)
and 3.9. Should a Triton choose another, the dot asm sees a column that is not 4 %laneid and makes its outputs NaN.

Split-K: per-split fp32 partials summed by the last arriving program of a row block (as `lop3.py`), behind a block
barrier. The x sum of each group: computed for all groups of a split before the loop (up to 16 groups per split),
or per group inside it.

In the Triton interpreter (TRITON_INTERPRET=1) inline PTX cannot run, so the kernel takes a pure-Triton twin path
(`USE_PTX=False`) with the same word tiles, computing each element's row dot from its n-tile's words: the
interpreter test checks the indexing and the epilogue; `lab/tests/speedrun/test_speedrun_int4_mma.py` runs the PTX text
of one warp in lockstep through a CPU emulator whose mma gathers fragments by the PTX ISA's layout; the H200 check
(`check_variants.py --device cuda`) runs it.

Parameters: `block_n` (rows per program, a multiple of 16 * num_warps), `split_k` (the largest split, halved until
it divides the groups), `num_warps`, `num_stages`. Needs a group size that is a multiple of 128.

Layout of the weight (CUDA `_convert_weight_to_int4pack`, inner_k_tiles = IKT): int32 [N/8, K/(16 IKT), 32, IKT/2];
the word at [n // 8, ko, (n % 8) * 4 + qq, j] holds, in nibble p (bits 4p..4p+3), weight k = 16 IKT ko + 32 j + 2 qq
+ 8 (p % 4) + p // 4 of row n.

Variants (grids at the headline, 8192 rows, 64 groups, 132 SMs; registers from the sm_90 compile with Triton 3.6):
- `mma_bn256_sk16_w4_st3` (256 rows, split-K 16, 4 warps, 3 stages): the grid of `lop3_f16_bn256_sk16`, 512
  programs of 4 groups, 4 n-tile pairs per warp; 128 registers (4 programs per SM), 446 loop instructions per group
  for 256 nibbles (1.7 per nibble) with Triton 3.6 at this tree (110 and 441 before the bounds fix and the
  hoisted scale rows).
- `mma_bn128_sk8_w4_st4` (128 rows, split-K 8, 4 warps, 4 stages): 512 programs of 8 groups, 2 n-tile pairs per
  warp, 72 registers: all resident at once, with a ring of 3 groups each.
- `mma_bn128_sk16_w4_st3` (128 rows, split-K 16, 4 warps, 3 stages): 1024 programs of 4 groups: shorter programs
  whose ramps overlap.
- `mma_bn256_sk8_w8_st4` (256 rows, split-K 8, 8 warps, 4 stages): 256 programs of 8 warps and 8 groups: half the
  split-K partials of the kept grid.
- `mma_bn64_sk8_w2_st4` (64 rows, split-K 8, 2 warps, 4 stages): 1024 programs of 2 warps and 8 groups: many
  small independent streams per SM.
- `mma_bn128_sk4_w4_st4` (128 rows, split-K 4, 4 warps, 4 stages): 256 programs of 16 groups: the longest pipeline
  per program, and a quarter of the split-K partials.
- `mma_bn128_sk8_w4_st6` (128 rows, split-K 8, 4 warps, 6 stages): `mma_bn128_sk8_w4_st4` with 5 groups in flight
  per program instead of 3.
- `mma_bn64_sk16_w2_st3` (64 rows, split-K 16, 2 warps, 3 stages): 2048 programs of 2 warps and 4 groups, about
  15 resident per SM.
- `mma_bn16_sk1_w1_st8` (16 rows, no split, 1 warp, 8 stages): 512 one-warp programs, each one n-tile pair over all
  of K: no partials, no second phase, 7 groups in flight per warp.
- `mma_bn32_sk1_w2_st6` (32 rows, no split, 2 warps, 6 stages): 256 programs over all of K, 5 groups in flight
  per program.
- `mma_bn64_sk1_w4_st8` (64 rows, no split, 4 warps, 8 stages): 128 programs, one per SM, 7 groups in flight.
- `mma_bn128_sk2_w4_st6` (128 rows, split-K 2, 4 warps, 6 stages): 128 programs of 32 groups, one per SM, with
  only 2 partials per row to sum.
- `mma_bn256_sk16_w8_st3` (256 rows, split-K 16, 8 warps, 3 stages): `mma_bn256_sk16_w4_st3` with 2 n-tile pairs
  per warp: twice the warps per SM at the same grid.
- `mma_bn256_sk32_w4_st2` (256 rows, split-K 32, 4 warps, 2 stages): 1024 programs of 2 groups: a program asks
  for half its share at once, and programs of a second round overlap the first's tails.
- `mma_pf_bn256_sk16_w4_st3` (as `mma_bn256_sk16_w4_st3`, prefetch): round 6 measured the in-asm x and scale loads
  as exposed latency (the no-split variants, 64 groups a warp, ran at 43-65 us); here `_PREFETCH_PTX` loads group
  g + 1's x pairs and scale/zero words while group g is decoded.
- `mma_pf_bn128_sk8_w4_st4` (as `mma_bn128_sk8_w4_st4`, prefetch): 8 groups a program, so 7 of its 8 load
  latencies hidden.
- `mma_pf_bn64_sk16_w2_st3` (as `mma_bn64_sk16_w2_st3`, prefetch): the small-program grid, 2048 programs of 4
  groups.
- `mma_pf_bn16_sk1_w1_st8` (as `mma_bn16_sk1_w1_st8`, prefetch): 512 one-warp programs over all of K, no split-K
  sum at all, if the latency was what made it slow.
- `mma_pf_bn32_sk1_w2_st6` (as `mma_bn32_sk1_w2_st6`, prefetch): 256 programs over all of K, two warps each, no
  split-K sum.
- `mma_pf_bn64_sk2_w2_st6` (64 rows, split-K 2, 2 warps, 6 stages, prefetch): 256 programs of 32 groups, 2 partials
  per row.
- `mma_pf_bn64_sk4_w2_st4` (64 rows, split-K 4, 2 warps, 4 stages, prefetch): 512 programs of 16 groups, 4
  partials per row.
- `mma_bn512_sk32_w8_st2` (512 rows, split-K 32, 8 warps, 2 stages): 512 programs of 2 groups, 4 n-tile pairs per
  warp: each program's whole share requested at once.

Scales asked of L2 ahead (`l2_ahead`): ncu `--set full` of `mma_bn256_sk16_w4_st3` on the H200 (13.5-14.3 us with
the weights left in L2 by its replays, against 15.8 us from DRAM in triage) shows 3.45 warps per scheduler, 0.81 of
them eligible, long-scoreboard stalls first. The words come through the pipeliner's cp.async, NUM_STAGES - 1 groups
ahead, but the scale asm loads each group's scale/zero words only when it runs: one DRAM round trip a group. (A
plain `tl.load` of them, which the pipeliner would issue early, makes Triton 3.6 move the dot asm into that load's
layout: the sm_90 layout test fails, so that route is closed.) Here the scale asm first issues `prefetch.global.L2`
for the same rows 1 (or 1 and 2) groups on, which nothing waits for.
- `mma_l2pf1_bn256_sk16_w4_st3` (as `mma_bn256_sk16_w4_st3`, 1 group ahead): of a program's 4 scale loads, 3 find
  their words in L2.
- `mma_l2pf2_bn256_sk16_w4_st3` (as `mma_bn256_sk16_w4_st3`, 1 and 2 groups ahead): twice the lead time, for the
  case that one group's work is shorter than a DRAM round trip.
- `mma_l2pf2_bn256_sk16_w4_st4` (as `mma_l2pf2_bn256_sk16_w4_st3`, 4 stages): the words of all 4 groups in flight
  as well.
- `mma_l2pf1_bn64_sk16_w2_st3` (64 rows, split-K 16, 2 warps, 3 stages, 1 group ahead): round 6's second-best grid
  (16.3 us), 2048 programs of 2 warps.
- `mma_l2pf2_bn128_sk8_w4_st4` (128 rows, split-K 8, 4 warps, 4 stages, 2 groups ahead): 8 groups a program, where
  a lead of 2 groups covers 6 of the 8 scale loads.

All at once (`l2_bulk`): `mma_l2pf1_bn256_sk16_w4_st3` took the kept grid from 15.78 to 14.74 us (h200_c10), so the
DRAM round trips inside a program's 4 groups are what its warps wait for. Here each program first issues
`cp.async.bulk.prefetch.L2` (one instruction a contiguous range, sm_90) for everything it will read: each n-tile's
words of its split (2 KB at the headline) and each group's scale/zero words of its rows (1 KB), so the whole
weight is requested within the first microseconds and the loop's cp.async and scale loads find it in L2.
- `mma_l2b_bn256_sk16_w4_st3` (as `mma_bn256_sk16_w4_st3`, bulk prefetch): the kept grid with everything asked
  for up front, no per-group prefetch.
- `mma_l2b1_bn256_sk16_w4_st3` (as `mma_l2pf1_bn256_sk16_w4_st3`, bulk prefetch too): the kept variant plus the
  bulk requests, in case L2 drops lines before the loop reaches them.
- `mma_l2b_bn128_sk16_w4_st3` (128 rows, split-K 16, 4 warps, 3 stages, bulk prefetch): 1024 programs of 72
  registers, all resident: with the data in L2, twice the warps to hide its latency.
- `mma_l2b_bn128_sk8_w4_st4` (128 rows, split-K 8, 4 warps, 4 stages, bulk prefetch): 8 groups a program, 4 KB of
  each n-tile asked for at once.
- `mma_l2b_bn256_sk8_w8_st4` (256 rows, split-K 8, 8 warps, 4 stages, bulk prefetch): 256 programs of 8 warps and
  8 groups; half the split-K partials of the kept grid.
- `mma_l2b_bn64_sk16_w2_st3` (64 rows, split-K 16, 2 warps, 3 stages, bulk prefetch): 2048 small programs, the
  bulk requests spread over as many programs as the grid has.

It lost (h200_c11: 21.7-39.3 us against 15.1 us for `mma_l2pf1_bn256_sk16_w4_st3` in the same triage): the whole
weight asked of L2 at once does not arrive sooner, and the loop's reads wait behind it.

The first group too (`l2_first`): the L2-ahead scale asm asks for the next group's words, so each program's first
scale load still goes to DRAM after its first words have arrived. `l2_first` prefetches those rows before the loop,
where their trip overlaps the wait for the first words.
- `mma_l2pf1f_bn256_sk16_w4_st3` (as `mma_l2pf1_bn256_sk16_w4_st3`, the first group prefetched too): with 4 groups
  a program, the one scale round trip left in the critical path.
- `mma_l2pf1f_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, 3 stages, 1 ahead, first too): 8 groups a
  program with no scale load left waiting; 72 registers.
- `mma_l2pf1f_bn256_sk32_w4_st2` (256 rows, split-K 32, 4 warps, 2 stages, 1 ahead, first too): 1024 programs of
  2 groups, now that short programs no longer start with a scale round trip.

It did not help (h200_c12: 15.02-19.21 us against 14.80 us).

x a group ahead in L1 (`x_next`): with the scale words in L2, each group still starts with the dot asm's 16 x
loads, which every program of a split reads and so find in L2, not L1 (the 4 programs of an SM are of different
splits): one L2 round trip a group before the first mma. With `x_next` the dot asm asks L1 for the next group's x
lines once it has its own.
- `mma_l2pf1x_bn256_sk16_w4_st3` (as `mma_l2pf1_bn256_sk16_w4_st3`, x a group ahead in L1): the kept variant with
  3 of a program's 4 x loads served by L1.
- `mma_l2pf1x_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, 3 stages, scales in L2 and x in L1 a group ahead):
  8 groups a program, 7 of them with both operands near.
- `mma_l2pf1x_bn256_sk8_w4_st3` (256 rows, split-K 8, 4 warps, 3 stages, scales in L2 and x in L1 a group ahead):
  the kept grid's rows with 8 groups a program, half the partials.

It lost (h200_c13: 15.39-15.98 us against 14.87 us).

The next scales asked for earlier (`sz_early`): the L2-ahead scale asm issues its prefetch after the group's dot,
so the next group's scale rows have one scale step and the next group's dot to arrive. Here the dot asm issues it
first (`sz_next`), a whole dot earlier, and the scale step is the plain one.
- `mma_l2pe_bn256_sk16_w4_st3` (as `mma_l2pf1_bn256_sk16_w4_st3`, the prefetch before the dot): the kept grid with
  a longer lead for each scale load.
- `mma_l2pe_bn256_sk8_w4_st3` (256 rows, split-K 8, 4 warps, 3 stages, early scale prefetch): 8 groups a program,
  7 of them with the scale rows asked for a group ahead.
- `mma_l2pe_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, 3 stages, early scale prefetch): 1024 programs of 72
  registers and 8 groups.

A tie (h200_c14: 15.08 us against 15.22 us for `mma_l2pf1_bn256_sk16_w4_st3` on that card, verified 1.352x, within
the kept variant's 1.349x-1.363x); the 8-group grids ran 15.16-18.52 us.

Groups as rows (`_int4_gemv_mma_groups_kernel`, `group_rows` set): a program owns `block_n` / 16 n-tile pairs over
its split's groups, `group_rows` groups per iteration as the tile's rows. Round 6 found the row-pair grids above
latency-bound (DRAM 47.5%, 21.8% occupancy, halving the instructions moved nothing) and the no-split ones slowest of
all (one mma chain, one x load and one scale load per group and warp, in a row); here one iteration reads each
n-tile's `group_rows` consecutive 512-byte k-outer tiles (contiguous, as the gemv target's kernel reads its rows),
a thread's rows are independent groups (independent mma chains, scale loads issued together),
and with no split there are no partials at all. The price: each row loads its own x pairs (16 KB of x per pair of
n-tiles, from L1/L2) and its x sum (one more mma and two shuffles in the dot asm, `x_sum`).
- `mmag_p1_g16_sk1_w4_st3` (1 pair, 16 groups a step, no split, 4 warps, 3 stages): 512 programs of 4 iterations
  of 16 KB, like the dense GEMV's 4 rows of 16 KB: the whole K of 16 rows per program, no partials.
- `mmag_p1_g16_sk1_w4_st4` (as `mmag_p1_g16_sk1_w4_st3`, 4 stages): all 4 iterations' loads can be in flight,
  3 of them before the first is used.
- `mmag_p1_g8_sk1_w2_st4` (1 pair, 8 groups a step, no split, 2 warps, 4 stages): 512 programs of 2 warps and 8
  iterations of 8 KB: smaller programs, more of them resident per SM.
- `mmag_p1_g8_sk1_w4_st4` (1 pair, 8 groups a step, no split, 4 warps, 4 stages): 2 rows per thread instead of 4,
  half the registers, 8 iterations of 8 KB.
- `mmag_p1_g32_sk1_w8_st3` (1 pair, 32 groups a step, no split, 8 warps, 3 stages): 512 programs of 8 warps and 2
  iterations of 32 KB: twice the bytes requested per program at once.
- `mmag_p1_g16_sk2_w4_st3` (1 pair, 16 groups a step, split-K 2, 4 warps, 3 stages): 1024 programs of 2
  iterations: two programs per pair, halving the serial part of each, at the cost of 2 partials per row.
- `mmag_p2_g8_sk1_w4_st4` (2 pairs, 8 groups a step, no split, 4 warps, 4 stages): 256 programs of 8 iterations
  of 16 KB; the two pairs' rows of one group share their x loads.
- `mmag_p1_g32_sk2_w8_st2` (1 pair, 32 groups a step, split-K 2, 8 warps, 2 stages): 1024 programs of one
  iteration each: every program asks for its whole 32 KB at once, no loop to pipeline.

They lost (h200_c9: 21.0-34.1 us): each row loading its own x doubled the long-scoreboard share.

The split-K sum inside the block (groups kernel, `num_warps` a multiple of `group_rows`): ncu's source page of
`mma_l2pf1_bn256_sk16_w4_st3` with the caches flushed (`lab/benchmarks/evidence/speedrun/ncu_source_20261202/`) puts
12% of the warps' samples in the split-K epilogue: 3 warps of each block wait at the barrier while the fourth's
fence and arrival atomic make their round trips to L2, and the last program of a row block then reads the 16
partials back. Triton gives row r of a [rows, 128] tile to warp r % num_warps, so when `group_rows` divides
`num_warps` every row of a warp is the same group (`gg` = warp % `group_rows`): the warp's rows share their x
loads and x-sum mma as in the row-pair kernel (ptxas merges them: 16 + 2 x loads and one x-sum mma a group, 446
loop instructions for 4 pairs), while the block's warps cover `group_rows` consecutive groups. With no split, the
groups' partials are summed through shared memory at the end of the block: no partials in global memory, no
fence, no atomic, one store.
- `mmag_p4_g16_sk1_w16_st3` (4 pairs, 16 groups a step, no split, 16 warps, 3 stages): 128 blocks of 512 threads,
  one an SM, each warp 4 pairs of one group an iteration (the kept kernel's work per warp), 4 iterations.
- `mmag_p4_g16_sk1_w16_st2` (as `mmag_p4_g16_sk1_w16_st3`, 2 stages): half the shared memory (64 KB), one
  iteration in flight instead of two.
- `mmag_p4_g8_sk1_w8_st3` (4 pairs, 8 groups a step, no split, 8 warps, 3 stages): 128 blocks of 8 warps and 8
  iterations: half the warps an SM, twice the iterations to pipeline.
- `mmag_p4_g8_sk1_w16_st3` (4 pairs, 8 groups a step, no split, 16 warps, 3 stages): 2 pairs per warp, 64
  registers, 8 iterations: shorter mma chains per warp, the same 16 warps an SM.
- `mmag_p2_g16_sk1_w16_st3` (2 pairs, 16 groups a step, no split, 16 warps, 3 stages): 256 blocks of 16 warps,
  one pair per warp and 4 iterations; 78 registers, so one block an SM and two rounds.
- `mmag_p2_g8_sk1_w16_st3` (2 pairs, 8 groups a step, no split, 16 warps, 3 stages): 256 blocks of 16 warps, one
  pair per warp, 52 registers and 32 KB: two blocks an SM, 32 warps, 8 iterations.
- `mmag_l2pf1_p4_g16_sk1_w16_st3` (as `mmag_p4_g16_sk1_w16_st3`, L2 ahead): each row's scale/zero word of the
  next iteration asked of L2 by the scale asm, as `l2_ahead` did for the kept kernel.
- `mmag_l2pf1_p2_g8_sk1_w16_st3` (as `mmag_p2_g8_sk1_w16_st3`, L2 ahead): 32 warps an SM with the next
  iteration's scale rows asked for.

They lost (h200_c15: 19.8-29.4 us against 15.1 us for `mma_l2pf1_bn256_sk16_w4_st3`): one 16-warp block an SM
with one pipeline and its barriers is slower than four 4-warp blocks, whatever the epilogue saves.

Scale words carried in the accumulator (`sz_carry`): the same source page puts the largest single wait of the loop
(13% of the samples) on the scale word, loaded by the scale asm of its own group (ptxas moves the load into the
dot, but not a whole dot ahead). Elements 1 and 3 of the acc tile are copies that nothing reads, so
`_scale_carry_ptx` keeps the next group's two scale/zero words there: each scale step uses the words loaded by the
previous one and then loads the next group's, a whole dot ahead, in registers the kernel holds anyway
(ptxas still gives the kernel more: 140 registers with Triton 3.6 at the kept grid, against 110).
- `mma_szc_bn256_sk16_w4_st3` (as `mma_bn256_sk16_w4_st3`, scale words carried): no L2 prefetch, the carried
  load alone a group ahead; 140 registers, 3 blocks an SM.
- `mma_szc2_bn256_sk16_w4_st3` (as `mma_szc_bn256_sk16_w4_st3`, and L2 asked for the group after): the carried
  load finds its words in L2, asked two groups ahead.
- `mma_szc2_bn256_sk16_w4_st3_r128` (as `mma_szc2_bn256_sk16_w4_st3`, maxnreg 128): 4 blocks an SM again, at 56
  bytes of spills a thread.
- `mma_szc_bn256_sk16_w4_st3_r128` (as `mma_szc_bn256_sk16_w4_st3`, maxnreg 128): 4 blocks an SM, 40 bytes of
  spills a thread.
- `mma_szc2_bn256_sk8_w4_st3` (256 rows, split-K 8, 4 warps, 3 stages, carried and L2 ahead): 256 programs of 8
  groups, 7 of whose scale loads are a group ahead; 148 registers.
- `mma_szc2_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, 3 stages, carried and L2 ahead): 512 programs of 8
  groups at 76 registers, 4 blocks an SM.

`mma_szc2_bn256_sk8_w4_st3` verified 1.419x [1.413, 1.424] against 1.355x for `mma_l2pf1_bn256_sk16_w4_st3` in the
same call (h200_c16; triage had them at 15.00 and 14.84 us), and was kept. Its neighbours:
- `mma_szc2_bn256_sk8_w4_st4` (as the kept, 4 stages): three groups' words in flight instead of two, 48 KB
  of shared memory a block.
- `mma_szc2_bn256_sk8_w8_st3` (as the kept, 8 warps): 2 pairs a warp, 76 registers, 16 warps an SM instead of 8.
- `mma_szc2_bn256_sk4_w4_st3` (256 rows, split-K 4, 4 warps, 3 stages): 128 programs of 16 groups, one an SM, half
  the kept grid's partials per row.
- `mma_szc2_bn128_sk4_w4_st3` (128 rows, split-K 4, 4 warps, 3 stages): 256 programs of 16 groups at 78 registers.
- `mma_szc2_bn64_sk8_w2_st3` (64 rows, split-K 8, 2 warps, 3 stages): 1024 programs of 2 warps and 8 groups, about 8
  an SM: 16 warps from many small independent pipelines.
- `mma_szc2_bn128_sk8_w8_st3` (128 rows, split-K 8, 8 warps, 3 stages): one pair a warp, 48 registers, 512 programs:
  32 warps an SM.
- `mma_szc2_bn128_sk8_w4_st4` (as `mma_szc2_bn128_sk8_w4_st3`, 4 stages): three groups of words in flight at
  76-78 registers.
- `mma_szc2_bn512_sk8_w8_st3` (512 rows, split-K 8, 8 warps, 3 stages): 128 programs of 8 warps, one an SM, each
  warp as the kept kernel's.

They lost (h200_c17: 15.3-18.6 us in triage against 14.69 us; verified 1.349x and 1.308x for the 64-row and 8-warp
grids against 1.416x for the kept variant again).

x in registers a group ahead too (`x_regs`, with `sz_carry`): the kept grid holds 2 blocks an SM (256 programs), so
registers are no limit there (148 used, up to 255 allowed). Each group's dot asm still starts by loading its 16 x
pairs from L2; here `_X_PREFETCH_PTX` loads the next group's pairs during this group (16 registers, the same for
every row of a lane, so one asm call serves them all), and the dot asm takes them as operands (`_MMA_DOT_X_PTX`);
140 registers at the kept grid with Triton 3.6. (The first build passed the prefetch asm only the x address, a
splat: Triton then ran it once on the scalar and splatted the results, so every column got element 0's pair, max
error 1.2e4 on the card (h200_c18). The asm now also takes the column tile, and the sm_90 layout test rejects an
asm on scalars.)
- `mma_szcx_bn256_sk8_w4_st3` (as the kept `mma_szc2_bn256_sk8_w4_st3`, x in registers): no load left between a
  group's words arriving and its first mma.
- `mma_szcx_bn128_sk8_w4_st3` (as `mma_szc2_bn128_sk8_w4_st3`, x in registers): 512 programs at 80 registers, 4
  an SM, 7 of whose 8 x loads are a group ahead.
- `mma_szcx_bn256_sk4_w4_st3` (as `mma_szc2_bn256_sk4_w4_st3`, x in registers): 128 programs of 16 groups, one an
  SM, where one warp's latency chain has the most groups to hide.

They lost (h200_c19: 16.0-24.8 us against 14.40 us; verified 1.271x and 1.142x against 1.417x).

The x sums in the dot asm (`xsum_asm`, with `sz_carry`): the kept variant sums x over its split's 8 groups before
the loop (ncu's source page: 9% of the samples wait there for the first x load, behind the first words) and picks
each group's sum inside the loop through shared memory, one more block barrier a group. Here the dot asm adds the
group's sum itself (`_MMA_DOT_XSUM_PTX`: one mma of a ones matrix against the chunk, two shuffles; ptxas merges the
mma across a lane's rows, as in the groups kernel), so no x is read before the first words and no barrier but the
pipeliner's is left in the loop.
- `mma_szcs_bn256_sk8_w4_st3` (as the kept `mma_szc2_bn256_sk8_w4_st3`, x sums in the dot asm): the kept grid,
  whose 2 blocks an SM leave registers to spare.
- `mma_szcs_bn128_sk8_w4_st3` (as `mma_szc2_bn128_sk8_w4_st3`, x sums in the dot asm): 512 programs of 8 groups
  at 70 registers, 4 an SM, with no barrier of their own.

They lost (h200_c20: 15.77 and 19.56 us against 14.40 us; the 128-row one verified 1.283x against 1.416x): the
ones-matrix mma and its shuffles in every group cost more than the barrier and the prologue wait they replace.

One scale address a pair (`sz_base`, with `sz_carry`): the word stream alone, at the kept kernel's grid, pipeline
and loads (`lab/benchmarks/device/int4_read_floor.py`, h200_c21), reads in 10.4 us against the kept kernel's 14.6 us
in the same timer, and ncu's source page of the kept kernel (caches flushed, h200_c21) puts 30% of the warps'
samples on fixed-latency waits and 21% issuing, against 12% on global loads: the loop now waits for its own
instructions more than for memory. The scale asm took a 64-bit address for each element (4 a pack, held across the
loop and advanced by Triton each group) and added the group offset to two of them: 148 registers. Here every
element of a pack gets the address of the pair's row 0, and the asm finds its lane's rows from %laneid (even row
lane / 4, odd row 8 rows on): 110 registers and 480 loop instructions (493) with Triton 3.6. It needs whole n-tile
pairs: an N that is not a multiple of 16 takes the per-row addresses.
- `mma_szb_bn256_sk8_w4_st3` (as the kept `mma_szc2_bn256_sk8_w4_st3`, one scale address a pair): the kept grid
  with 13 fewer instructions a group and 38 fewer registers.
- `mma_szb_bn256_sk16_w4_st3` (256 rows, split-K 16, 4 warps, 3 stages): at 110 registers all 512 programs are
  resident (4 an SM, 16 warps), where `mma_szc2_bn256_sk16_w4_st3` (140) ran in two rounds.
- `mma_szb_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, 3 stages): 512 programs of 72 registers, 4 an SM,
  2 pairs a warp.
- `mma_szb_bn256_sk8_w4_st4` (as `mma_szb_bn256_sk8_w4_st3`, 4 stages): three groups' words in flight, with the
  registers for a third block an SM left over.

`mma_szb_bn256_sk8_w4_st3` verified 1.436x against 1.413x for the kept `mma_szc2_bn256_sk8_w4_st3` in the same call
(h200_c22; triage 14.33 against 14.58 us) and was kept; the 16-split grid verified 1.349x, the 128-row and 4-stage
ones triaged at 16.4 and 16.3 us. ncu's source page of it (h200_c22): 33% of the samples on fixed-latency waits,
19% issuing, 12% at barriers. Of the barrier samples, the loop's are the x-sum pick (the group's sum taken out of
the split's x-sum vector by a block reduction: a shared-memory store, two barriers, shuffles) and the pipeliner's
(each group's words go global -> shared by cp.async, then shared -> registers after a wait and a barrier, and a
barrier before the buffer is refilled), although every thread reads back only the words it copied itself.
- With `xsum_mem` the split's x sums are stored once to a per-program slot in global memory (`xsum_ptr`), and each
  group reads its sum with one scalar load (the pipeliner issues it with the words): no block reduction in the loop.
- With `words_regs` (and `sz_base`) there is no pipeliner: the words of the next two groups wait in registers.
  The loop takes two groups an iteration, one from each of two register sets (A: even groups, B: odd), and refills
  each set two groups on right after its dot, so no loaded value is ever copied between registers (a copy would
  wait for the load) and no shared memory or barrier is left in the loop. It needs 128-k groups and an even number
  of groups a split (else the shared-memory pipeline).
- `mma_szbm_bn256_sk8_w4_st3` (as the kept `mma_szb_bn256_sk8_w4_st3`, x sums from memory): 473 loop instructions
  (480) and two barriers fewer a group at 110 registers.
- `mma_szbr_bn256_sk8_w4_st3` (as the kept, words in registers): the pipeliner's copies, waits and barriers gone, 945
  instructions for two groups (472 a group); 168 registers (8 bytes of stack), still 2 blocks an SM.
- `mma_szbrm_bn256_sk8_w4_st3` (as the kept, words in registers and x sums from memory): no barrier in the loop,
  927 instructions for two groups (464 a group), 167 registers.
- `mma_szbrm_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, words in registers, x sums from memory): 512 programs
  of 88 registers, 4 an SM, 16 warps without a barrier in their loops.

They lost (h200_c23: triage 14.45-16.23 us against 14.27 us for `mma_szb_bn256_sk8_w4_st3`; verified 1.394x for the
x sums from memory and 1.414x for the 128-row words-in-registers grid, against 1.440x for the kept variant again).
Fewer barriers did not make the loop faster; ncu's source page of `mma_szbrm_bn256_sk8_w4_st3` (h200_c23) has 36% of
its samples on long-scoreboard waits, most at the first shift of each register set's words: two groups ahead in
registers arrive later than two groups ahead through cp.async.

Two mma chains (`two_chains`): the fixed-latency waits remain the largest share, and each pair's 8 mmas a group
form one dependent chain (each mma adds to the accumulator the last one wrote). Here words 1 and 3 accumulate into
a second set of registers, added at the end of the asm: two chains of 4, 4 more additions a pack.
- `mma_szb2c_bn256_sk8_w4_st3` (as the kept `mma_szb_bn256_sk8_w4_st3`, two chains): 116 registers, 496 loop
  instructions (480).
- `mma_szb2c_bn256_sk16_w4_st3` (256 rows, split-K 16, two chains): 120 registers, so all 512 programs resident
  (4 an SM, 16 warps).

x in 16-bit fixed point on the integer tensor cores (`x_fixed`, with `sz_base`): the decode is 224 of the kept
loop's 480 instructions a group, 7 a word (3 shifts, 4 `lop3`), because a bf16 has only 7 mantissa bits and each
nibble must be shifted to bit 0 of its half. `mma.m16n8k32` with u8 A takes a nibble in any byte: `w & 0x0F0F0F0F`
and `(w >> 4) & 0x0F0F0F0F` are a word's 8 nibbles as 8 u8 (3 instructions a word), and one mma multiplies a word
pair's 32 k. B is then integer x: before its loop each program rounds its split's x to x_int = round(x / x_scale)
with x_scale = max |x| / 32767 over the split, so |x - x_scale x_int| <= max |x| / 65534 (2^-16 of the largest x: as
fine as bf16 itself for every x within 7 binades of it; the baseline rounds each dequantized weight to bf16, 2^-9
relative), and writes its high (signed) and low (unsigned) bytes as the B fragments of each group (256 bytes a
group, `_xq_block_offset`) to its own scratch block. Per word pair two mmas (u8 by s8, u8 by u8) add into int32; the asm
returns 256 hi + lo, exact, as fp32, the scale step takes (zero - 8 scale) sum x_int, and the partial is multiplied
by x_scale before the store. A NaN in x makes the split's output NaN (x_scale inf, every x_int 0). 362 loop
instructions a group (480) at 116 registers with Triton 3.6
(`lab/benchmarks/evidence/speedrun/compile_sm90_int4_szq_20261202.txt`); the prologue adds a block reduction for max |x|
and 16 byte stores a thread. The blocks are then asked of L1 (`prefetch.global.L1`, 16 lines at the headline): the
stores reach L2 only, and the first build, without it, waited for L2 at every group's first mma (h200_c25: 18.2 us
in triage, 20% of ncu's samples on that one wait).
- `mma_szq_bn256_sk8_w4_st3` (as the kept `mma_szb_bn256_sk8_w4_st3`, x in fixed point): the kept grid with a
  quarter fewer loop instructions, 116 registers.
- `mma_szq_bn256_sk16_w4_st3` (256 rows, split-K 16, 4 warps, 3 stages): 512 programs of 4 groups, all resident
  (4 an SM, 16 warps), now that a group costs fewer instructions.
- `mma_szq_bn128_sk8_w4_st3` (128 rows, split-K 8, 4 warps, 3 stages): 512 programs of 78 registers and 214 loop
  instructions, 4 an SM.
- `mma_szq_bn256_sk8_w4_st4` (as `mma_szq_bn256_sk8_w4_st3`, 4 stages): three groups' words in flight, for a
  loop that now reaches its waits sooner.

With the L1 request the first mma still waited (h200_c26: 17.96 us, 19% of the samples there, long scoreboard):
the fragment load sits right after the pipeliner's barrier and the mma right after it, with 2 warps a scheduler to
cover it. With `x_fixed` 2, `_XQ_PREFETCH_PTX` loads the next group's B registers while this group's dot runs (16
registers a lane, as `x_regs` did for the bf16 pairs), so no load stands between a group's words and its mmas.
- `mma_szqr_bn256_sk8_w4_st3` (as `mma_szq_bn256_sk8_w4_st3`, B a group ahead): the kept grid, whose 2 blocks an
  SM leave the registers for it.
- `mma_szqr_bn256_sk16_w4_st3` (as `mma_szq_bn256_sk16_w4_st3`, B a group ahead): 512 programs of 4 groups, the
  fastest fixed-point grid of h200_c25 and h200_c26.
- `mma_szqr_bn128_sk8_w4_st3` (as `mma_szq_bn128_sk8_w4_st3`, B a group ahead): 512 programs of 2 pairs a warp,
  4 an SM, where the 16 registers cost the least.

B a group ahead took the kept grid to 15.65 us (h200_c27; 1.327x verified, against 1.439x for the kept variant),
and ncu's source page moves the largest waits into the prologue: a quarter of the samples sit in code that runs
once a program (x's load, the max |x| reduction, the stores and their barrier, the first B load), and the
pipeline's first word loads are only issued after all of it. With `x_fixed` 3 each program first asks L2 for the
words of its first NUM_STAGES - 1 groups (one `cp.async.bulk.prefetch.L2` of 512 bytes a group per n-tile, as
`l2_bulk` did for the whole split), so their DRAM trip overlaps the prologue.
- `mma_szqw_bn256_sk8_w4_st3` (as `mma_szqr_bn256_sk8_w4_st3`, first words asked early): the kept grid with 2
  groups of its 8 in flight before the prologue starts.
- `mma_szqw_bn256_sk16_w4_st3` (256 rows, split-K 16, first words asked early): 512 programs of 4 groups, where
  the prologue is the larger part of a program.
- `mma_szqw_bn256_sk8_w4_st4` (as `mma_szqw_bn256_sk8_w4_st3`, 4 stages): 3 groups asked before the prologue and
  in flight in the loop.

That lost too (h200_c28: 18.0 us, as `l2_bulk` did). Counted by where they run, ncu's samples of `x_fixed` 2
(h200_c27) against the kept kernel (h200_c22): the loop's fell by 15% (2753 against 3243), the once-a-program
code's nearly doubled (1723 against 916), and the largest of them waits for the first B load from the blocks just
written. With `x_fixed` 4 a grid of its own (`_xq_prepare_kernel`, one program a split and row of x) rounds x and
writes the blocks, the x sums and x_scale once for all row blocks, and the GEMV is launched after it with
`launch_pdl`: it starts while the prepare grid runs (which launches its dependents first thing), streams its
first words, and its dot asm waits (`griddepcontrol.wait`) only before the first B load. The GEMV then has no
x prologue at all, and no x-sum pick in the loop: the dot asm loads the group's sum of x_int with the B registers.
- `mma_szqp_bn256_sk8_w4_st3` (as `mma_szq_bn256_sk8_w4_st3`, x prepared by a grid before): the kept grid with
  neither the x load nor the x-sum reduction of its prologue.
- `mma_szqp_bn256_sk16_w4_st3` (256 rows, split-K 16, x prepared by a grid before): 512 programs of 4 groups,
  whose prologue was the larger share of each.
- `mma_szqp_bn128_sk8_w4_st3` (128 rows, split-K 8, x prepared by a grid before): 512 programs of 2 pairs a warp,
  4 an SM, without the per-program x work that a smaller block repeats more often.

Under ncu (which runs the two grids one after the other, so no PDL overlap) the GEMV alone took 20.1-20.6 us
(h200_c29, triage 16.8-20.2 us), 37% of its samples at the first two integer mmas of a group, waiting for the B
loads just issued: the blocks are in L2, read by every program of a split, and each group's load is exposed.
With `x_fixed` 5 the dot asm also loads the next group's B registers right after the wait, for the next
iteration, and takes its own from the previous call (the first group loads its own): a whole group of lead
without a load ahead of the loop, which would sit after the wait and hold back the pipeline's first words.
- `mma_szqpr_bn256_sk8_w4_st3` (as `mma_szqp_bn256_sk8_w4_st3`, B a group ahead): the kept grid with a group's
  lead for each B load and no x prologue.
- `mma_szqpr_bn128_sk8_w4_st3` (as `mma_szqp_bn128_sk8_w4_st3`, B a group ahead): 512 programs, the fastest
  prepared grid of h200_c29 (16.8 us).
- `mma_szqpr_bn256_sk16_w4_st3` (256 rows, split-K 16, B a group ahead): 512 programs of 4 groups, one more
  grid where the first group's own load is a quarter of the loads.

The first build of `x_fixed` 5 was wrong on the card (h200_c30, max error 645): it loaded the next group's registers
straight into its outputs, and LLVM had given those the registers of the previous call's inputs, so they were
overwritten before being read (a static test now checks every asm of this module for an output written before the
last read of an input). Fixed (the loads go to locals, copied out at the end), it is right and slower (h200_c31:
17.6-20.0 us against 14.1 us; 186 registers at 256 rows, each pack's asm holding its own copy).

None of the fixed-point builds beat the bf16 decode (h200_c25..c31: best triage 15.5 us, best verify 1.333x,
against 13.9-14.3 us and 1.432x-1.444x for `mma_szb_bn256_sk8_w4_st3` in the same calls): a quarter fewer
instructions in the loop, but the x work moved into each program's critical path (the rounding, its stores and
barrier, and the first B load) or, prepared by a grid of its own, a B load per group from L2 that the loop waits
for. The speedup of the decode itself is real and measured: it needs x in fixed point at no per-program cost,
which this kernel structure does not give.

Who sums the split-K partials (`split_sum`): the kept kernel's epilogue (`"block"`) is a chain of waits that every
program runs at the same moment, since all 256 programs are resident at once and finish together: the partial's
store, a block barrier, a release fence (`MEMBAR.ALL.GPU`, which waits for the stores to reach L2), the arrival
atomic (an L2 round trip), a second barrier to share its result, and in the last arriver of each row block the
partials' loads (another round trip) and a reduction through shared memory; ncu put 5.2% of the kept kernel's
samples on the barrier after the atomic alone (h200_c22). With `"grid"` each program stores its partials and exits,
and `_split_sum_kernel` (32 programs of 2 warps at the headline) sums them, launched with `launch_pdl`: the GEMV
signals its dependents at its start, so the sum's programs are resident and parked in `griddepcontrol.wait` while
the weights stream, as decode attention's combine is (`decode_attention/pdl_two_pass.py`, which beat the
last-arriver form there).
- `mma_szbt_bn256_sk8_w4_st3` (as `mma_szb_bn256_sk8_w4_st3`, the sum by a second grid): the kept kernel without
  its fence, atomic and last-arriver reduction at the end of every program.
- `mma_szbt_bn256_sk16_w4_st3` (256 rows, split-K 16, the sum by a second grid): 512 programs of 4 groups, all
  resident, whose epilogue was twice the kept grid's share of the work.
- `mma_szbt_bn128_sk8_w4_st3` (128 rows, split-K 8, the sum by a second grid): 512 programs of 2 pairs a warp,
  4 an SM, twice the epilogues of the kept grid, each now a store and an exit.

The sum grid lost (h200_c32: triage 16.0-17.6 us against 13.9 us, verified 1.234x and 1.164x against 1.446x),
though under ncu its GEMV alone took 13.95 us against the kept kernel's 15.10 us (h200_c22): the epilogue is worth
about 1.1 us, and a second grid costs more than that here. With `"rows"` the GEMV keeps one launch and drops the
barriers instead: each thread takes one ticket per row it stored (8192 counters at the headline), and the thread
that arrives last for a row adds the row's partials and stores it. Per thread the chain is the fence, the atomic
and (for an eighth of them) the loads, with no block barrier and no shared memory.
- `mma_szbe_bn256_sk8_w4_st3` (as `mma_szb_bn256_sk8_w4_st3`, a ticket per row): the kept kernel with the
  barriers, the broadcast of the ticket and the last arriver's shared-memory reduction gone from its epilogue.
- `mma_szbe_bn256_sk16_w4_st3` (256 rows, split-K 16, a ticket per row): 512 programs of 4 groups, all resident,
  where the epilogue is a larger share of each program.
- `mma_szbe_bn128_sk8_w4_st3` (128 rows, split-K 8, a ticket per row): 512 programs, 4 an SM, twice the kept
  grid's epilogues, each without a barrier.

Timed apart at the kept grid (`lab/benchmarks/device/int4_read_floor.py OUT split_sum`, h200_c34, CUDA-graph replay):
the last arriver 14.98 us, a ticket per row 14.70 us, the sum grid 18.26 us under `launch_pdl` and 15.44 us
without, its GEMV alone (the sum not launched) 13.47 us and the sum alone 1.79 us. So the epilogue is 1.5 us of
the kernel on that card, a plain second grid costs 2 us, and letting the sum grid launch at the GEMV's start cost
2.8 us more (torch.profiler's eager trace shows the sum kernel's 1.3 us after the GEMV's 11.7 us either way).
With `"grid_late"` each program asks for the sum grid's launch only after its partials' store, so the launch
overlaps the GEMV's last programs instead of its whole run.
- `mma_szbtl_bn256_sk8_w4_st3` (as `mma_szbt_bn256_sk8_w4_st3`, the launch asked for at the end): the GEMV
  without its epilogue chain (13.47 us), and the sum grid's launch behind its last programs.
- `mma_szbtl_bn256_sk16_w4_st3` (256 rows, split-K 16, the launch asked for at the end): 512 programs, whose
  epilogue chains were the larger loss at split-K 16.

That lost as well (h200_c35: 15.77 us against 14.93 us for the last arriver timed apart, verified 1.330x against
1.437x; lab/speedrun/README.md "Round 13"): the kept kernel's last arriver stays.

With `"cluster"` the 8 splits of a row block are one thread-block cluster (launched with cluster dims by
`_launch_in_clusters`; the kernel stays a one-CTA Triton kernel), and the partials never reach global memory: each
lane that holds a row's value stores it (`st.shared::cluster`) into the landing buffer of the CTA that sums that row
(an eighth of the block's rows each), one cluster barrier (arrive.release, wait.acquire) replaces the block barrier,
fence, atomic and second barrier, and each CTA adds its rows' 8 slots from its own shared memory and stores them.
The chain is then one barrier of 8 CTAs over the SM-to-SM network instead of three round trips to L2.
- `mma_szbcl_bn256_sk8_w4_st3` (as `mma_szb_bn256_sk8_w4_st3`, summed in the cluster): 32 clusters of 8, all
  resident; 106 registers, 944 SASS instructions against 1032, the loop unchanged.
- `mma_szbcl_bn256_sk8_w4_st4` (the same, 4 stages): the cluster's epilogue frees the kept kernel's registers for
  a deeper pipeline (49 KB of shared memory a CTA, 4 CTAs an SM still fit).
- `mma_szbcl_bn128_sk8_w4_st3` (128 rows, split-K 8, summed in the cluster): 512 CTAs, 4 an SM, twice the
  epilogues, each now a cheap one.

Compiled for the shape (`specialize_shape`): the kernel takes n_out, the k-outer tiles and the groups a split as
run-time integers, so every scale and word address step is a multiply by a register and the pipelined loop's trip
count is unknown when compiled; `rmsnorm/two_pass_l2.py` gained 2% from the same specialization (h200_c36).
With `STATIC_SHAPE` (n_out, n_k_outer, groups_per_split; (0, 0, 0): at run time) those are constants, one kernel
per weight shape.
- `mma_szbc_bn256_sk8_w4_st3` (as `mma_szb_bn256_sk8_w4_st3`, compiled for the shape): the kept kernel with
  constant address steps and an 8-trip loop known when compiled.
- `mma_szbc_bn256_sk16_w4_st3` (256 rows, split-K 16, compiled for the shape): 4 trips a program, where the
  pipeline's prologue and tail are half the loop.

Slower (h200_c37: triage 14.69 and 14.94 us against 14.22 us, verified 1.360x at split-K 16 against 1.438x): the
loop was already 479 of 480 instructions either way, and the constants moved the schedule around it.

The cluster sum lost too (h200_c38: triage 16.10-17.76 us against 14.20 us, verified 1.246x at 128 rows and 1.159x
at 256 against 1.433x in the same call; timed apart at the kept grid 17.72 us against 14.48 us for the last
arriver, 14.64 us for a ticket a row, and 13.47 us for the GEMV with no sum at all); where the cluster form's
time goes was not profiled.

So the sum costs the kept kernel about 1 us over the GEMV alone (13.47 us bare, 13.88 us under the contract's
perturbation, h200_c38), and every form so far either kept a chain of round trips or added a launch. With
`"fixed"` the sum needs no chain: a row's splits add into one 64-bit word with one relaxed atomic each, the
partial in fixed point (30 fractional bits, biased to be non-negative) in bits 0-51 and the arrival in bits 52-55.
Atomic adds to one word are totally ordered, so the split whose atomic returns 7 arrivals holds the whole sum
(the returned word plus its own addend): no partials' store, no barrier, no fence, no second load. Integer adds
commute exactly, so the sum does not depend on the order of arrival. A partial that fixed point cannot hold
(|v| >= 2^18, inf, NaN) is added to the row's fp32 word instead, behind a release fence, and counted in bits
56-59; the last arriver adds that word after an acquire fence, so any input gives its fp32 sum. Fixed point's
own error is at most 2^-30 a split.
- `mma_szbfx_bn256_sk8_w4_st3` (as `mma_szb_bn256_sk8_w4_st3`, the fixed-point atomic a row): the kept kernel with
  its epilogue chain replaced by one atomic round trip, issued from the accumulator tile by the lanes that pick a
  row's value (2 a lane), with no compaction of the tile first.
- `mma_szbfx_bn128_sk8_w4_st3` (128 rows, split-K 8, the fixed-point atomic): 512 programs, 4 an SM, twice the
  kept grid's epilogues, each now one atomic a lane.
- `mma_szbfx_bn256_sk8_w4_st4` (256 rows, split-K 8, the fixed-point atomic, 4 stages): one more group in flight
  per program, the kept grid's shared memory (48 KB) still fitting 4 programs an SM.
- `mma_szbfx_bn256_sk8_w4_st2` (the kept fixed-point kernel at 2 stages): one group less in flight, less shared
  memory a program.
- `mma_szbfx_bn128_sk4_w4_st3` (128 rows, split-K 4, the fixed-point atomic): 256 programs as in the kept grid, each
  16 groups of half as many rows, so half the atomics a row.
- `mma_szbfx_bn256_sk16_w4_st3` (256 rows, split-K 16, the fixed-point atomic): 512 programs of 4 groups, all
  resident (108 registers, 32 KB of shared memory: 4 an SM, 16 warps where the kept grid has 8). Split-K 16 lost
  before (`mma_szb_bn256_sk16_w4_st3`, 1.349x against 1.436x) with the last-arriver chain, twice as many of them
  ending at once; here each program's sum is one atomic a lane, and the 16-split word halves the bias and the limit.
- `mma_szbfx_bn256_sk16_w4_st2` (256 rows, split-K 16, the fixed-point atomic, 2 stages): a program of 4 groups
  with one group in flight ahead instead of two, and half the shared memory.

`mma_szbfx_bn256_sk8_w4_st3` won (h200_c39: verified 1.499x [1.493, 1.504] against 1.438x for
`mma_szb_bn256_sk8_w4_st3` in the same call; 14.50 us under ncu against 15.10 us) and is kept; its neighbours lost or
tied (128 rows 1.472x, 4 stages 1.328x; h200_c40: 2 stages and split-K 4 slower in triage). h200_c40 also
verified `mma_szbfx2_bn256_sk8_w4_st3`, meant to ask L2 two groups ahead: 1.498x [1.493, 1.502]. It was the kept
kernel again: the `sz_carry` loop already asks L2 for the group after next at `l2_ahead` 1 and compiles the same
SASS at 2, so the variant is gone and make_kernel refuses the pair; its verify stands as a second one of the kept
kernel, in another call.

The split-K 16 pair lost to it (h200_c41: 2 stages 1.503x [1.500, 1.505], 3 stages 1.439x, against 1.507x [1.504,
1.509] for `mma_szbfx_bn256_sk8_w4_st3` in the same call).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

VARIANTS: dict[str, dict[str, Any]] = {
    "mma_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3},
    "mma_bn128_sk8_w4_st4": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 4},
    "mma_bn128_sk16_w4_st3": {"block_n": 128, "split_k": 16, "num_warps": 4, "num_stages": 3},
    "mma_bn256_sk8_w8_st4": {"block_n": 256, "split_k": 8, "num_warps": 8, "num_stages": 4},
    "mma_bn64_sk8_w2_st4": {"block_n": 64, "split_k": 8, "num_warps": 2, "num_stages": 4},
    "mma_bn128_sk4_w4_st4": {"block_n": 128, "split_k": 4, "num_warps": 4, "num_stages": 4},
    "mma_bn128_sk8_w4_st6": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 6},
    "mma_bn64_sk16_w2_st3": {"block_n": 64, "split_k": 16, "num_warps": 2, "num_stages": 3},
    "mma_bn16_sk1_w1_st8": {"block_n": 16, "split_k": 1, "num_warps": 1, "num_stages": 8},
    "mma_bn32_sk1_w2_st6": {"block_n": 32, "split_k": 1, "num_warps": 2, "num_stages": 6},
    "mma_bn64_sk1_w4_st8": {"block_n": 64, "split_k": 1, "num_warps": 4, "num_stages": 8},
    "mma_bn128_sk2_w4_st6": {"block_n": 128, "split_k": 2, "num_warps": 4, "num_stages": 6},
    "mma_bn256_sk16_w8_st3": {"block_n": 256, "split_k": 16, "num_warps": 8, "num_stages": 3},
    "mma_bn256_sk32_w4_st2": {"block_n": 256, "split_k": 32, "num_warps": 4, "num_stages": 2},
    "mma_bn512_sk32_w8_st2": {"block_n": 512, "split_k": 32, "num_warps": 8, "num_stages": 2},
    "mma_pf_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "prefetch": True},
    "mma_pf_bn128_sk8_w4_st4": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 4, "prefetch": True},
    "mma_pf_bn64_sk16_w2_st3": {"block_n": 64, "split_k": 16, "num_warps": 2, "num_stages": 3, "prefetch": True},
    "mma_pf_bn16_sk1_w1_st8": {"block_n": 16, "split_k": 1, "num_warps": 1, "num_stages": 8, "prefetch": True},
    "mma_pf_bn32_sk1_w2_st6": {"block_n": 32, "split_k": 1, "num_warps": 2, "num_stages": 6, "prefetch": True},
    "mma_pf_bn64_sk2_w2_st6": {"block_n": 64, "split_k": 2, "num_warps": 2, "num_stages": 6, "prefetch": True},
    "mma_pf_bn64_sk4_w2_st4": {"block_n": 64, "split_k": 4, "num_warps": 2, "num_stages": 4, "prefetch": True},
    "mma_l2pf1_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_ahead": 1},
    "mma_l2pf2_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_ahead": 2},
    "mma_l2pf2_bn256_sk16_w4_st4": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 4, "l2_ahead": 2},
    "mma_l2pf1_bn64_sk16_w2_st3": {"block_n": 64, "split_k": 16, "num_warps": 2, "num_stages": 3, "l2_ahead": 1},
    "mma_l2pf2_bn128_sk8_w4_st4": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 4, "l2_ahead": 2},
    "mma_l2b_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_bulk": True},
    "mma_l2b1_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_bulk": True,
                                   "l2_ahead": 1},
    "mma_l2b_bn128_sk16_w4_st3": {"block_n": 128, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_bulk": True},
    "mma_l2b_bn128_sk8_w4_st4": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 4, "l2_bulk": True},
    "mma_l2b_bn256_sk8_w8_st4": {"block_n": 256, "split_k": 8, "num_warps": 8, "num_stages": 4, "l2_bulk": True},
    "mma_l2b_bn64_sk16_w2_st3": {"block_n": 64, "split_k": 16, "num_warps": 2, "num_stages": 3, "l2_bulk": True},
    "mma_l2pf1f_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_ahead": 1,
                                     "l2_first": True},
    "mma_l2pf1f_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "l2_ahead": 1,
                                    "l2_first": True},
    "mma_l2pf1f_bn256_sk32_w4_st2": {"block_n": 256, "split_k": 32, "num_warps": 4, "num_stages": 2, "l2_ahead": 1,
                                     "l2_first": True},
    "mma_l2pf1x_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "l2_ahead": 1,
                                     "x_next": True},
    "mma_l2pf1x_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "l2_ahead": 1,
                                    "x_next": True},
    "mma_l2pf1x_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "l2_ahead": 1,
                                    "x_next": True},
    "mma_l2pe_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_early": True},
    "mma_l2pe_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_early": True},
    "mma_l2pe_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_early": True},
    "mmag_p1_g16_sk1_w4_st3": {"block_n": 16, "group_rows": 16, "split_k": 1, "num_warps": 4, "num_stages": 3},
    "mmag_p1_g16_sk1_w4_st4": {"block_n": 16, "group_rows": 16, "split_k": 1, "num_warps": 4, "num_stages": 4},
    "mmag_p1_g8_sk1_w2_st4": {"block_n": 16, "group_rows": 8, "split_k": 1, "num_warps": 2, "num_stages": 4},
    "mmag_p1_g8_sk1_w4_st4": {"block_n": 16, "group_rows": 8, "split_k": 1, "num_warps": 4, "num_stages": 4},
    "mmag_p1_g32_sk1_w8_st3": {"block_n": 16, "group_rows": 32, "split_k": 1, "num_warps": 8, "num_stages": 3},
    "mmag_p1_g16_sk2_w4_st3": {"block_n": 16, "group_rows": 16, "split_k": 2, "num_warps": 4, "num_stages": 3},
    "mmag_p2_g8_sk1_w4_st4": {"block_n": 32, "group_rows": 8, "split_k": 1, "num_warps": 4, "num_stages": 4},
    "mmag_p1_g32_sk2_w8_st2": {"block_n": 16, "group_rows": 32, "split_k": 2, "num_warps": 8, "num_stages": 2},
    "mmag_p4_g16_sk1_w16_st2": {"block_n": 64, "group_rows": 16, "split_k": 1, "num_warps": 16, "num_stages": 2},
    "mmag_p4_g16_sk1_w16_st3": {"block_n": 64, "group_rows": 16, "split_k": 1, "num_warps": 16, "num_stages": 3},
    "mmag_p4_g8_sk1_w8_st3": {"block_n": 64, "group_rows": 8, "split_k": 1, "num_warps": 8, "num_stages": 3},
    "mmag_p4_g8_sk1_w16_st3": {"block_n": 64, "group_rows": 8, "split_k": 1, "num_warps": 16, "num_stages": 3},
    "mmag_p2_g16_sk1_w16_st3": {"block_n": 32, "group_rows": 16, "split_k": 1, "num_warps": 16, "num_stages": 3},
    "mmag_p2_g8_sk1_w16_st3": {"block_n": 32, "group_rows": 8, "split_k": 1, "num_warps": 16, "num_stages": 3},
    "mmag_l2pf1_p4_g16_sk1_w16_st3": {"block_n": 64, "group_rows": 16, "split_k": 1, "num_warps": 16, "num_stages": 3,
                                      "l2_ahead": 1},
    "mmag_l2pf1_p2_g8_sk1_w16_st3": {"block_n": 32, "group_rows": 8, "split_k": 1, "num_warps": 16, "num_stages": 3,
                                     "l2_ahead": 1},
    "mma_szc_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 0},
    "mma_szc2_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3,
                                   "sz_carry": True, "l2_ahead": 1},
    "mma_szc2_bn256_sk16_w4_st3_r128": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3,
                                        "sz_carry": True, "l2_ahead": 1, "maxnreg": 128},
    "mma_szc_bn256_sk16_w4_st3_r128": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3,
                                       "sz_carry": True, "l2_ahead": 0, "maxnreg": 128},
    "mma_szc2_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn256_sk8_w4_st4": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn256_sk8_w8_st3": {"block_n": 256, "split_k": 8, "num_warps": 8, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn256_sk4_w4_st3": {"block_n": 256, "split_k": 4, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn128_sk4_w4_st3": {"block_n": 128, "split_k": 4, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn64_sk8_w2_st3": {"block_n": 64, "split_k": 8, "num_warps": 2, "num_stages": 3, "sz_carry": True,
                                 "l2_ahead": 1},
    "mma_szc2_bn128_sk8_w8_st3": {"block_n": 128, "split_k": 8, "num_warps": 8, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn128_sk8_w4_st4": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szc2_bn512_sk8_w8_st3": {"block_n": 512, "split_k": 8, "num_warps": 8, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1},
    "mma_szcx_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "x_regs": True},
    "mma_szcx_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "x_regs": True},
    "mma_szcx_bn256_sk4_w4_st3": {"block_n": 256, "split_k": 4, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "x_regs": True},
    "mma_szcs_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "xsum_asm": True},
    "mma_szcs_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "xsum_asm": True},
    "mma_szb_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                 "l2_ahead": 1, "sz_base": True},
    "mma_szb_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True},
    "mma_szb_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                 "l2_ahead": 1, "sz_base": True},
    "mma_szb_bn256_sk8_w4_st4": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                 "l2_ahead": 1, "sz_base": True},
    "mma_szbm_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "xsum_mem": True},
    "mma_szbr_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "words_regs": True},
    "mma_szbrm_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "words_regs": True, "xsum_mem": True},
    "mma_szbrm_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "words_regs": True, "xsum_mem": True},
    "mma_szb2c_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "two_chains": True},
    "mma_szb2c_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3,
                                    "sz_carry": True, "l2_ahead": 1, "sz_base": True, "two_chains": True},
    "mma_szq_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                 "l2_ahead": 1, "sz_base": True, "x_fixed": 1},
    "mma_szq_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 1},
    "mma_szq_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                 "l2_ahead": 1, "sz_base": True, "x_fixed": 1},
    "mma_szq_bn256_sk8_w4_st4": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                 "l2_ahead": 1, "sz_base": True, "x_fixed": 1},
    "mma_szqr_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 2},
    "mma_szqr_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "x_fixed": 2},
    "mma_szqr_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 2},
    "mma_szqw_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 3},
    "mma_szqw_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "x_fixed": 3},
    "mma_szqw_bn256_sk8_w4_st4": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 3},
    "mma_szqp_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 4},
    "mma_szqp_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "x_fixed": 4},
    "mma_szqp_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "x_fixed": 4},
    "mma_szqpr_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "x_fixed": 5},
    "mma_szqpr_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "x_fixed": 5},
    "mma_szqpr_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3,
                                    "sz_carry": True, "l2_ahead": 1, "sz_base": True, "x_fixed": 5},
    "mma_szbt_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "split_sum": "grid"},
    "mma_szbt_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "grid"},
    "mma_szbt_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "split_sum": "grid"},
    "mma_szbtl_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "grid_late"},
    "mma_szbtl_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3,
                                    "sz_carry": True, "l2_ahead": 1, "sz_base": True, "split_sum": "grid_late"},
    "mma_szbc_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "specialize_shape": True},
    "mma_szbc_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "specialize_shape": True},
    "mma_szbe_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "split_sum": "rows"},
    "mma_szbe_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "rows"},
    "mma_szbe_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                  "l2_ahead": 1, "sz_base": True, "split_sum": "rows"},
    "mma_szbcl_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "cluster"},
    "mma_szbcl_bn256_sk8_w4_st4": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "cluster"},
    "mma_szbcl_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "cluster"},
    "mma_szbfx_bn256_sk8_w4_st3": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
    "mma_szbfx_bn128_sk8_w4_st3": {"block_n": 128, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
    "mma_szbfx_bn256_sk8_w4_st4": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 4, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
    "mma_szbfx_bn256_sk8_w4_st2": {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 2, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
    "mma_szbfx_bn128_sk4_w4_st3": {"block_n": 128, "split_k": 4, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                   "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
    "mma_szbfx_bn256_sk16_w4_st3": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 3, "sz_carry": True,
                                    "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
    "mma_szbfx_bn256_sk16_w4_st2": {"block_n": 256, "split_k": 16, "num_warps": 4, "num_stages": 2, "sz_carry": True,
                                    "l2_ahead": 1, "sz_base": True, "split_sum": "fixed"},
}

WORDS = 4  # words per lane per 128-k chunk (32 k each)


def _mma_dot_ptx(x_in_regs: bool = False, x_sum: bool = False, x_next: bool = False, sz_next: bool = False,
                 two_chains: bool = False) -> str:
    """PTX: ($0..$3) += the mma chain of two n-tiles' 4 words (even tile $4..$7, odd tile $8..$11) against x. Per word:
    3 shifts and 4 `lop3` make the 4 bf16x2 pairs 128 + q (exact), 2 mma.m16n8k16 (bf16 in, fp32 accumulate) multiply
    them by x: A rows 0-7 are the even tile's rows, 8-15 the odd tile's; every column of B is x. So d0 = d1 is sum (128
    + q) x over the lane's row (lane // 4) of the even tile, d2 = d3 of the odd one.

    $16 is the address of the chunk's first x pair: the lane loads its own 16 pairs (pair a, nibbles a and a + 4, of
    word j is pair 16 j + 4 a + lane % 4), so no x tensor takes part in choosing the asm's layout. $12 is the column
    (4 lane + j) of the first element: the fragments are only right when the element of lane L is hardware lane L's,
    which Triton's layout decides, so any other lane makes every output NaN (a loud wrong result, not a quiet one).
    The accumulators are tied to the outputs ($20..$23 = $0..$3).

    With `x_in_regs` the pairs come in as operands instead, loaded a group ahead by `_PREFETCH_PTX`: pair a of word j
    is $(16 + 4 a + j), and the accumulators are $32..$35.

    With `x_sum` the asm also adds the chunk's sum of x to a second accumulator, $4..$7 (all four the same), and every
    other operand moves up by 4 (words $8..$15, column $16, x address $20, accumulators $24..$31). One more mma makes
    it: A all ones, and column n of B the chunk's k-tile n (lane 4 n + t loads pairs 8 n + t and 8 n + t + 4), so
    lane 4 n + t gets the sums of k-tiles 2 t and 2 t + 1; two butterfly shuffles add the 4 lanes of a row.

    With `x_next`, $20 is a byte offset (0 for a split's last group) and, after loading its pairs, every lane asks
    L1 for the two 128-byte lines of x at that offset: the next group's pairs, which the next iteration's loads then
    find in L1 instead of L2; the accumulators move to $24..$27.

    With `sz_next`, $20..$23 are the addresses of this group's scale/zero words (the even row's in $20, the odd
    row's in $22, as the scale asm takes them) and $24 a byte offset (0 for a split's last group): before anything
    else the asm asks L2 for both rows at that offset, the next group's, a whole dot earlier than the L2-ahead scale
    asm does; the accumulators move to $28..$31.

    With `two_chains` words 1 and 3 accumulate into a second set of registers, added at the end: two chains of 4
    dependent mmas instead of one of 8."""
    first = 8 if x_sum else 4  # the first input operand: the even tile's word 0
    even, odd, column, x_addr = first, first + 4, first + 8, first + 12
    regs = ", ".join(f"x{j}_{a}" for j in range(WORDS) for a in range(4))
    lines = ["{", ".reg .b32 s, e0, e1, e2, e3, o0, o1, o2, o3, lid, qq;", f".reg .b32 {regs};", ".reg .b64 xa;",
             ".reg .pred off;", "mov.u32 lid, %laneid;", "shl.b32 lid, lid, 2;", f"setp.ne.u32 off, ${column}, lid;"]
    assert not (x_in_regs and x_sum), "int4_gemv mma: the x sum needs the loading asm"
    if x_sum:
        lines.insert(4, ".reg .b32 one, zero, b0, b1, c0, c1, c2, c3, t;\n.reg .b64 xb;")
    if x_in_regs:
        lines += [f"mov.b32 x{j}_{a}, ${x_addr + 4 * a + j};" for j in range(WORDS) for a in range(4)]
    else:
        lines += ["mov.u32 qq, %laneid;", "and.b32 qq, qq, 3;", "mul.wide.u32 xa, qq, 4;",
                  f"add.s64 xa, xa, ${x_addr};"]
        lines += [f"ld.global.nc.b32 x{j}_{a}, [xa+{64 * j + 16 * a}];" for j in range(WORDS) for a in range(4)]
    if sz_next:
        assert not (x_in_regs or x_sum or x_next), "int4_gemv mma: sz_next goes with the plain loading asm"
        lines[4:4] = [".reg .b64 sn;", f"add.s64 sn, ${x_addr + 4}, ${x_addr + 8};", "prefetch.global.L2 [sn];",
                      f"add.s64 sn, ${x_addr + 6}, ${x_addr + 8};", "prefetch.global.L2 [sn];"]
    if x_next:
        assert not (x_in_regs or x_sum), "int4_gemv mma: x_next goes with the plain loading asm"
        lines[4:4] = [".reg .b64 xn;"]
        lines += [f"add.s64 xn, ${x_addr}, ${x_addr + 4};", "prefetch.global.L1 [xn];", "prefetch.global.L1 [xn+128];"]
    if two_chains:
        assert not (x_in_regs or x_sum or x_next or sz_next), "int4_gemv mma: two_chains goes with the plain asm"
        lines[1:1] = [".reg .f32 c0, c1, c2, c3;"]
        lines += [f"mov.b32 c{n}, 0;" for n in range(4)]
    for j in range(WORDS):
        acc = "{c0, c1, c2, c3}" if two_chains and j % 2 else "{$0, $1, $2, $3}"
        for tile, word in (("e", f"${even + j}"), ("o", f"${odd + j}")):
            for a in range(4):
                src = word
                if a:
                    lines.append(f"shr.u32 s, {word}, {4 * a};")
                    src = "s"
                lines.append(f"lop3.b32 {tile}{a}, {src}, 0x000F000F, 0x43004300, 0xEA;")
        for k_tile in range(2):  # pairs 2 k_tile (k = 2 qq + 16 k_tile) and 2 k_tile + 1 (k + 8)
            lo, hi = 2 * k_tile, 2 * k_tile + 1
            lines.append(
                f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {acc}, "
                f"{{e{lo}, o{lo}, e{hi}, o{hi}}}, {{x{j}_{lo}, x{j}_{hi}}}, {acc};"
            )
    if two_chains:
        lines += [f"add.f32 ${n}, ${n}, c{n};" for n in range(4)]
    if x_sum:  # lane 4 n + t: B column n is k-tile n, so b0 = pair 8 n + t, b1 = pair 8 n + t + 4
        lines += ["mov.b32 one, 0x3F803F80;",
                  "mov.b32 zero, 0;", "mov.u32 t, %laneid;", "shr.u32 t, t, 2;", "shl.b32 t, t, 3;",
                  "add.u32 t, t, qq;", "mul.wide.u32 xb, t, 4;", f"add.s64 xb, xb, ${x_addr};",
                  "ld.global.nc.b32 b0, [xb];", "ld.global.nc.b32 b1, [xb+16];",
                  "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {c0, c1, c2, c3}, {one, one, one, one}, "
                  "{b0, b1}, {zero, zero, zero, zero};",
                  "add.f32 c0, c0, c1;", "shfl.sync.bfly.b32 t, c0, 1, 0x1f, 0xffffffff;", "add.f32 c0, c0, t;",
                  "shfl.sync.bfly.b32 t, c0, 2, 0x1f, 0xffffffff;", "add.f32 c0, c0, t;"]
        lines += [f"add.f32 ${4 + n}, ${4 + n}, c0;" for n in range(4)]
    lines += [f"@off mov.b32 ${n}, 0x7FC00000;" for n in range(4)]
    lines.append("}")
    return "\n".join(lines)


_MMA_DOT_PTX = tl.constexpr(_mma_dot_ptx())
_MMA_DOT_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 12) + ",l,l,l,l,0,1,2,3")
_MMA_DOT_2C_PTX = tl.constexpr(_mma_dot_ptx(two_chains=True))
_MMA_DOT_X_PTX = tl.constexpr(_mma_dot_ptx(x_in_regs=True))
_MMA_DOT_X_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 28) + ",0,1,2,3")
_MMA_DOT_XNEXT_PTX = tl.constexpr(_mma_dot_ptx(x_next=True))
_MMA_DOT_XNEXT_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 12) + ",l,l,l,l,l,l,l,l,0,1,2,3")
_MMA_DOT_SZNEXT_PTX = tl.constexpr(_mma_dot_ptx(sz_next=True))
_MMA_DOT_SZNEXT_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 12) + "," + ",".join(["l"] * 12)
                                           + ",0,1,2,3")
_MMA_DOT_XSUM_PTX = tl.constexpr(_mma_dot_ptx(x_sum=True))
_MMA_DOT_XSUM_CONSTRAINTS = tl.constexpr(",".join(["=f"] * 8) + "," + ",".join(["r"] * 12) + ",l,l,l,l,"
                                         + ",".join(str(n) for n in range(8)))


def _mma_dot_xq_ptx(b_from: str = "load", prepared: bool = False) -> str:
    """PTX (`x_fixed`): the group's row dots sum q x_int of two n-tiles' 4 words (even tile $4..$7, odd $8..$11)
    against x in 16-bit fixed point, x_int = 256 hi + lo (hi signed, lo unsigned bytes), on the integer tensor cores.
    Per word pair: 2 shifts and 4 `and` make the u8 A fragment (a0, a1: the even and odd words' nibbles 0, 2, 4, 6;
    a2, a3: nibbles 1, 3, 5, 7), and 2 mma.m16n8k32 (u8 by s8 for the high bytes, u8 by u8 for the low) add its 32
    k to two int32 accumulators; every column of B is x, so d0 = d1 is the even row's and d2 = d3 the odd row's.
    B register b0 byte i is x_int at the k of nibble 2 i, b1 byte i at nibble 2 i + 1's; a group's fragment block
    holds, for word j and qq = lane % 4, 16 bytes at 16 (4 j + qq): b0 and b1 of the high bytes, then of the low ones
    (`_xq_block_offset`). Out: hi 256 + lo (exact in int32) as fp32 in $0..$3; $12 is the column as in
    `_mma_dot_ptx`, and a lane that is not hardware lane column / 4 makes every output NaN. Where B comes from:
    - `load`: the lane loads its B registers from the group's block at $16 (written before the loop);
    - `regs`: they come in as operands, loaded a group ahead by `_XQ_PREFETCH_PTX`: register n of word j is
      $(16 + 4 n + j);
    - `ahead` (`x_fixed` 5, with `prepared`): as `load` for the first group (flag $44 not 0), else the registers the
      previous call returned ($(48 + 4 n + j)); the call also loads the next group's (block $36) and returns them in
      $(4 + 4 n + j), so the inputs start at $20 (words $20..$27, column $28, this group's block $32). The next
      group's loads go to locals and are copied out at the end: an output may be given the register of an input that
      is dead after the asm (the first build, which loaded straight into the outputs, overwrote the previous call's
      registers before reading them: wrong on the card, h200_c30).

    With `prepared` (`x_fixed` 4 and 5) the blocks were written by `_xq_prepare_kernel`, the grid before this one:
    the asm first waits for it (`griddepcontrol.wait`, at once when it is done), and also loads the group's sum of
    x_int (from $20, or $40 with `ahead`) into $1 and $3 (the copies nothing reads), where the scale step takes it."""
    assert b_from in ("load", "regs", "ahead") and (prepared or b_from != "ahead"), b_from
    ahead = b_from == "ahead"
    even = 20 if ahead else 4  # the first input: the even tile's word 0
    odd, column, frag = even + 4, even + 8, even + 12
    x_sum = frag + (8 if ahead else 4)
    xr = ", ".join(f"x{j}_{n}" for j in range(WORDS) for n in range(4))
    nr = ", ".join(f"n{j}_{n}" for j in range(WORDS) for n in range(4))
    loads = [f"ld.global.v4.b32 {{x{j}_0, x{j}_1, x{j}_2, x{j}_3}}, [xa+{64 * j}];" for j in range(WORDS)]
    lines = ["{"] + ([".reg .pred first;", ".reg .b64 xn;", f".reg .b32 {nr};"] if ahead else [])
    lines += [f".reg .b32 s, lid, {'xs, ' if prepared else ''}zero, a0, a1, a2, a3, h0, h1, h2, h3, l0, l1, l2, l3;",
              f".reg .b32 {xr};"] + ([] if b_from == "regs" else [".reg .b64 xa;"]) + [".reg .pred off;"]
    lines += ["griddepcontrol.wait;"] if prepared else []
    lines += ["mov.u32 lid, %laneid;", "shl.b32 lid, lid, 2;", f"setp.ne.u32 off, ${column}, lid;"]
    if b_from != "regs":
        lines += ["mov.u32 s, %laneid;", "and.b32 s, s, 3;", "mul.wide.u32 xa, s, 16;", f"add.s64 xa, xa, ${frag};"]
    lines.append("mov.b32 zero, 0;")
    if b_from == "load":
        lines += loads
    elif b_from == "regs":
        lines += [f"mov.b32 x{j}_{n}, ${frag + 4 * n + j};" for j in range(WORDS) for n in range(4)]
    else:
        lines += [f"setp.ne.u32 first, ${frag + 12}, 0;", "mov.u32 s, %laneid;", "and.b32 s, s, 3;",
                  "mul.wide.u32 xn, s, 16;", f"add.s64 xn, xn, ${frag + 4};"]
        lines += [f"ld.global.v4.b32 {{n{j}_0, n{j}_1, n{j}_2, n{j}_3}}, [xn+{64 * j}];" for j in range(WORDS)]
        lines += [f"mov.b32 x{j}_{n}, ${frag + 16 + 4 * n + j};" for j in range(WORDS) for n in range(4)]
        lines += [f"@first {line}" for line in loads]
    for j in range(WORDS):
        lines += [f"and.b32 a0, ${even + j}, 0x0F0F0F0F;", f"and.b32 a1, ${odd + j}, 0x0F0F0F0F;",
                  f"shr.u32 s, ${even + j}, 4;", "and.b32 a2, s, 0x0F0F0F0F;", f"shr.u32 s, ${odd + j}, 4;",
                  "and.b32 a3, s, 0x0F0F0F0F;"]
        for acc, kind, b in (("h", "s8", (0, 1)), ("l", "u8", (2, 3))):
            d = "{" + ", ".join(f"{acc}{n}" for n in range(4)) + "}"
            c = "{zero, zero, zero, zero}" if j == 0 else d
            lines.append(f"mma.sync.aligned.m16n8k32.row.col.s32.u8.{kind}.s32 {d}, {{a0, a1, a2, a3}}, "
                         f"{{x{j}_{b[0]}, x{j}_{b[1]}}}, {c};")
    lines += ["mad.lo.s32 h0, h0, 256, l0;", "mad.lo.s32 h2, h2, 256, l2;", "cvt.rn.f32.s32 $0, h0;",
              "cvt.rn.f32.s32 $2, h2;"]
    if prepared:
        lines += [f"ld.global.b32 xs, [${x_sum}];", "mov.b32 $1, xs;", "mov.b32 $3, xs;"]
    else:
        lines += ["cvt.rn.f32.s32 $1, h0;", "cvt.rn.f32.s32 $3, h2;"]
    if ahead:
        lines += [f"mov.b32 ${4 + 4 * n + j}, n{j}_{n};" for j in range(WORDS) for n in range(4)]
    lines += [f"@off mov.b32 ${n}, 0x7FC00000;" for n in range(4)]
    lines.append("}")
    return "\n".join(lines)


_MMA_DOT_XQ_PTX = tl.constexpr(_mma_dot_xq_ptx())
_MMA_DOT_XQ_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 12) + ",l,l,l,l")
_MMA_DOT_XQ_PREP_PTX = tl.constexpr(_mma_dot_xq_ptx(prepared=True))
_MMA_DOT_XQ_PREP_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 12) + ",l,l,l,l,l,l,l,l")
_MMA_DOT_XQ_AHEAD_PTX = tl.constexpr(_mma_dot_xq_ptx("ahead", prepared=True))
_MMA_DOT_XQ_AHEAD_CONSTRAINTS = tl.constexpr(",".join(["=f"] * 4 + ["=r"] * 16 + ["r"] * 12 + ["l"] * 12 + ["r"] * 20))
_MMA_DOT_XQ_REGS_PTX = tl.constexpr(_mma_dot_xq_ptx("regs"))
_MMA_DOT_XQ_REGS_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f," + ",".join(["r"] * 28))


def _xq_prefetch_ptx() -> str:
    """PTX (`x_fixed` 2): one group's B registers, a group before the dot asm takes them: register n of the lane's
    word j into $(4 n + j), the 16 bytes of block (j, qq) at the group's block address $20 (qq from the column tile
    $16..$19: an address alone would be a splat, run once and splatted)."""
    lines = ["{", ".reg .b32 qq;", ".reg .b64 xa;", "shr.u32 qq, $16, 2;", "and.b32 qq, qq, 3;",
             "mul.wide.u32 xa, qq, 16;", "add.s64 xa, xa, $20;"]
    lines += [f"ld.global.v4.b32 {{${j}, ${4 + j}, ${8 + j}, ${12 + j}}}, [xa+{64 * j}];" for j in range(WORDS)]
    return "\n".join(lines + ["}"])


_XQ_PREFETCH_PTX = tl.constexpr(_xq_prefetch_ptx())
_XQ_PREFETCH_CONSTRAINTS = tl.constexpr(",".join(["=r"] * 16) + ",r,r,r,r,l,l,l,l")


def _prefetch_ptx(scales: bool = True) -> str:
    """PTX: one group's operands, loaded a group before they are used: x pair a of the lane's word j into $(4 a + j)
    (pair 16 j + 4 a + lane % 4 from the address $20), and the scale/zero words of the lane's even and odd rows into
    $16 and $17 (from the addresses $24 and $26, elements 0 and 2 of the address tile; $18, $19 are 0). Only
    addresses come in, so the outputs take the layout of the asm that uses them. Without `scales`, only the x pairs:
    outputs $0..$15, the lane's column tile in $16..$19 (4 lane + j: qq from element 0) and the x address $20. The
    x address alone would be a splat, and Triton then runs the asm once on the scalar and splats its results: every
    element would get element 0's pair."""
    lines = ["{", ".reg .b32 qq;", ".reg .b64 xa;"]
    if scales:
        lines += ["mov.u32 qq, %laneid;", "and.b32 qq, qq, 3;"]
    else:
        lines += ["shr.u32 qq, $16, 2;", "and.b32 qq, qq, 3;"]
    lines += ["mul.wide.u32 xa, qq, 4;", "add.s64 xa, xa, $20;"]
    lines += [f"ld.global.nc.b32 ${4 * a + j}, [xa+{64 * j + 16 * a}];" for j in range(WORDS) for a in range(4)]
    if scales:
        lines += ["ld.global.nc.b32 $16, [$24];", "ld.global.nc.b32 $17, [$26];", "mov.b32 $18, 0;",
                  "mov.b32 $19, 0;"]
    return "\n".join(lines + ["}"])


_PREFETCH_PTX = tl.constexpr(_prefetch_ptx())
_PREFETCH_CONSTRAINTS = tl.constexpr(",".join(["=r"] * 20) + ",l,l,l,l,l,l,l,l")
_X_PREFETCH_PTX = tl.constexpr(_prefetch_ptx(scales=False))
_X_PREFETCH_CONSTRAINTS = tl.constexpr(",".join(["=r"] * 16) + ",r,r,r,r,l,l,l,l")

# acc += scale * dot + (zero - 136 scale) * xsum for the lane's two rows (element 0: the even tile's, element 2: the
# odd tile's), where dot = sum (128 + q) x, so that scale * (q - 8) + zero is what multiplies x; elements 1 and 3
# pass through. Inputs: dot $4..$7, the addresses of the rows' scale/zero words $8..$11 (the even row's in $8, the
# odd row's in $10: each element's own row, clamped into the tensor; a bf16 scale in the low half, the zero in the
# high half; loaded here, so that no sz tensor takes part in choosing the layout), xsum $12, acc $16..$19 (tied to
# $0..$3).
_SCALE_PTX = tl.constexpr("""
{
.reg .b32 t, sz;
.reg .f32 s, z;
ld.global.nc.b32 sz, [$8];
shl.b32 t, sz, 16;
mov.b32 s, t;
and.b32 t, sz, 0xFFFF0000;
mov.b32 z, t;
fma.rn.f32 z, s, 0fC3080000, z;
fma.rn.f32 $0, s, $4, $0;
fma.rn.f32 $0, z, $12, $0;
ld.global.nc.b32 sz, [$10];
shl.b32 t, sz, 16;
mov.b32 s, t;
and.b32 t, sz, 0xFFFF0000;
mov.b32 z, t;
fma.rn.f32 z, s, 0fC3080000, z;
fma.rn.f32 $2, s, $6, $2;
fma.rn.f32 $2, z, $12, $2;
}
""")
_SCALE_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,f,f,f,f,l,l,l,l,f,f,f,f,0,1,2,3")



def _scale_prefetch_ptx(ahead: int) -> str:
    """PTX: `_SCALE_PTX`, after asking L2 for the same two rows' scale/zero words `ahead` groups on: operand $(16 + 4 a)
    is the byte offset of group a + 1 from this one (0 past the split's last group, a harmless repeat); the
    accumulators move to $(16 + 4 ahead).. (tied). A prefetch has no result, so nothing waits for it; when the loop
    reaches that group its scale load finds the line in L2 instead of DRAM."""
    lines = ["{", ".reg .b64 pa;"]
    for a in range(ahead):
        lines += [f"add.s64 pa, $8, ${16 + 4 * a};", "prefetch.global.L2 [pa];",
                  f"add.s64 pa, $10, ${16 + 4 * a};", "prefetch.global.L2 [pa];"]
    return "\n".join(lines) + _SCALE_PTX.value + "}"


# Before the loop (`l2_bulk`): one L2 bulk prefetch of $2 bytes from the address $1 when $3 is not 0; $0 is a dummy
# (the asm is not pure, so it stays without a user).
_BULK_PREFETCH_PTX = tl.constexpr("""
{
.reg .pred go;
setp.ne.u32 go, $3, 0;
@go cp.async.bulk.prefetch.L2.global [$1], $2;
mov.b32 $0, 0;
}
""")
_BULK_PREFETCH_CONSTRAINTS = tl.constexpr("=r,l,r,r")

# Before the loop (`l2_first`): the prefetch of the first group's scale/zero words that the L2-ahead scale asm never
# makes (it asks for the next group's): the even and odd rows' addresses are elements 0 and 2 of the pack ($4, $6);
# the outputs are dummies (the asm is not pure, so it stays without a user).
_FIRST_SZ_PREFETCH_PTX = tl.constexpr("""
{
prefetch.global.L2 [$4];
prefetch.global.L2 [$6];
mov.b32 $0, 0;
mov.b32 $1, 0;
mov.b32 $2, 0;
mov.b32 $3, 0;
}
""")
_FIRST_SZ_PREFETCH_CONSTRAINTS = tl.constexpr("=r,=r,=r,=r,l,l,l,l")

# After the `x_fixed` prologue: ask L1 for the 128-byte line at $1; $0 is a dummy (not pure, so it stays)
_L1_PREFETCH_PTX = tl.constexpr("prefetch.global.L1 [$1];\nmov.b32 $0, 0;")

_SCALE_PF1_PTX = tl.constexpr(_scale_prefetch_ptx(1))
_SCALE_PF2_PTX = tl.constexpr(_scale_prefetch_ptx(2))
_SCALE_PF1_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,f,f,f,f,l,l,l,l,f,f,f,f,l,l,l,l,0,1,2,3")
_SCALE_PF2_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,f,f,f,f,l,l,l,l,f,f,f,f,l,l,l,l,l,l,l,l,0,1,2,3")

# As _SCALE_PTX, with the two scale/zero words as operands ($8 even row, $9 odd row; from `_PREFETCH_PTX`).
_SCALE_REGS_PTX = tl.constexpr(_SCALE_PTX.value.replace("ld.global.nc.b32 sz, [$8];", "mov.b32 sz, $8;").replace(
    "ld.global.nc.b32 sz, [$10];", "mov.b32 sz, $9;"))
_SCALE_REGS_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,f,f,f,f,r,r,r,r,f,f,f,f,0,1,2,3")



def _f32_hex(value: float) -> str:
    """An fp32 constant as PTX writes it after `0f`."""
    return struct.pack(">f", value).hex().upper()


def _scale_carry_ptx(after: bool, pair_base: bool = False, offset: int = 136, x_sum: str = "$12") -> str:
    """PTX: the scale step with the scale/zero words carried in the accumulator's spare slots. Elements 1 and 3 of
    the acc tile are copies nothing reads (only elements 0 and 2, the even and odd rows, are stored), so here they
    hold this group's two scale/zero words, loaded one group earlier: the step reads them from $1 and $3, applies
    them to $0 and $2 as `_SCALE_PTX` does, then loads the next group's words into $1 and $3 (the rows' addresses
    $8 and $10 plus the byte offset $16, 0 at a split's last group). With `after`, the rows at the offset $20 (the
    group after that, or 0) are first asked of L2. Inputs: dot $4..$7, xsum $12; acc tied ($0..$3 = the last four
    operands). No register beyond the accumulators carries a scale word.

    With `pair_base`, $8 (every element of the pack alike) is the address of group g's word of row 0 of the pair's
    even tile: the lane's even row is row %laneid / 4 of it, 4 bytes a row, and its odd row 8 rows (32 bytes) on,
    so each load and prefetch is one address add from this base instead of one a row, and Triton computes one
    address a pack instead of one an element.

    `offset` is what the dot adds to each q (136 = 128 + 8 for the bf16 decode; 8 for `x_fixed`, whose dot is sum
    q x_int): the zero-point term is (zero - offset scale) xsum. `x_sum` is the operand that holds it ($5, element 1
    of the dot tile, for `x_fixed` 4)."""
    lines = ["{", ".reg .b32 t, sz;", ".reg .f32 s, z;", ".reg .b64 pa;"]
    if pair_base:
        lines += [".reg .b32 row;", ".reg .b64 pr;", "mov.u32 row, %laneid;", "shr.u32 row, row, 2;",
                  "mul.wide.u32 pr, row, 4;", "add.s64 pr, pr, $8;"]
    if after and pair_base:
        lines += ["add.s64 pa, pr, $20;", "prefetch.global.L2 [pa];", "prefetch.global.L2 [pa+32];"]
    elif after:
        lines += ["add.s64 pa, $8, $20;", "prefetch.global.L2 [pa];", "add.s64 pa, $10, $20;",
                  "prefetch.global.L2 [pa];"]
    for out, word, dot in (("$0", "$1", "$4"), ("$2", "$3", "$6")):
        lines += [f"mov.b32 sz, {word};", "shl.b32 t, sz, 16;", "mov.b32 s, t;", "and.b32 t, sz, 0xFFFF0000;",
                  "mov.b32 z, t;", f"fma.rn.f32 z, s, 0f{_f32_hex(-offset)}, z;",
                  f"fma.rn.f32 {out}, s, {dot}, {out};",
                  f"fma.rn.f32 {out}, z, {x_sum}, {out};"]
    if pair_base:
        lines += ["add.s64 pa, pr, $16;", "ld.global.nc.b32 $1, [pa];", "ld.global.nc.b32 $3, [pa+32];", "}"]
    else:
        lines += ["add.s64 pa, $8, $16;", "ld.global.nc.b32 $1, [pa];", "add.s64 pa, $10, $16;",
                  "ld.global.nc.b32 $3, [pa];", "}"]
    return "\n".join(lines)


_SCALE_CARRY_PTX = tl.constexpr(_scale_carry_ptx(False))
_SCALE_CARRY_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,f,f,f,f,l,l,l,l,f,f,f,f,l,l,l,l,0,1,2,3")
_SCALE_CARRY_AFTER_PTX = tl.constexpr(_scale_carry_ptx(True))
_SCALE_CARRY_AFTER_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,f,f,f,f,l,l,l,l,f,f,f,f,l,l,l,l,l,l,l,l,0,1,2,3")
_SCALE_CARRY_BASE_PTX = tl.constexpr(_scale_carry_ptx(False, pair_base=True))
_SCALE_CARRY_AFTER_BASE_PTX = tl.constexpr(_scale_carry_ptx(True, pair_base=True))
_SCALE_CARRY_AFTER_X8_PTX = tl.constexpr(_scale_carry_ptx(True, offset=8))
_SCALE_CARRY_AFTER_BASE_X8_PTX = tl.constexpr(_scale_carry_ptx(True, pair_base=True, offset=8))
_SCALE_CARRY_AFTER_X8S_PTX = tl.constexpr(_scale_carry_ptx(True, offset=8, x_sum="$5"))
_SCALE_CARRY_AFTER_BASE_X8S_PTX = tl.constexpr(_scale_carry_ptx(True, pair_base=True, offset=8, x_sum="$5"))
# before the loop: the acc tile's first value, 0 in elements 0 and 2 and the first group's scale/zero words (the
# addresses $4 and $6) in elements 1 and 3
_CARRY_FIRST_PTX = tl.constexpr("""
{
mov.b32 $0, 0;
ld.global.nc.b32 $1, [$4];
mov.b32 $2, 0;
ld.global.nc.b32 $3, [$6];
}
""")
_CARRY_FIRST_CONSTRAINTS = tl.constexpr("=f,=f,=f,=f,l,l,l,l")


# `split_sum="rows"`: once a thread (on a scalar), around its relaxed row tickets: the release of its partials before
# them, the acquire of the other splits' partials after (tl.atomic_add with sem="acq_rel" fences each atomic on its
# own, so a thread's two tickets would be two fence and atomic round trips one after the other)
_FENCE_PTX = tl.constexpr("fence.acq_rel.gpu;\nmov.b32 $0, $1;")

# `split_sum="cluster"`: the SPLIT_K programs of a row block are one thread-block cluster (make_kernel's
# `_launch_in_clusters`), and each CTA's landing buffer is the last BLOCK_N fp32 of its dynamic shared memory, past
# Triton's own (`%dynamic_smem_size` is the launch's size, Triton's plus the buffer). Once a thread, at the start: its
# arrival at the cluster barrier whose wait comes before the first remote store, so no store lands in a CTA that has
# not started.
_CLUSTER_ARRIVE_PTX = tl.constexpr("barrier.cluster.arrive.relaxed.aligned;\nmov.b32 $0, $1;")
_CLUSTER_WAIT_PTX = tl.constexpr("barrier.cluster.wait.aligned;\nmov.b32 $0, $1;")
# once a thread, after its remote stores: the release of them to the cluster and the acquire of the others'
_CLUSTER_SYNC_PTX = tl.constexpr(
    "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\nmov.b32 $0, $1;")
# per element, where $4 is not 0: the fp32 bits $1 into CTA $2's landing buffer at byte $3 from the end of its
# dynamic shared memory
_CLUSTER_PUT_PTX = tl.constexpr("""{
.reg .pred keep;
.reg .u32 top, local, remote;
setp.ne.u32 keep, $4, 0;
mov.u32 top, %dynamic_smem_size;
mov.u32 local, global_smem;
add.u32 local, local, top;
add.u32 local, local, $3;
mapa.shared::cluster.u32 remote, local, $2;
@keep st.shared::cluster.b32 [remote], $1;
mov.b32 $0, 0;
}""")
# per element: the fp32 bits at byte $1 from the end of this CTA's dynamic shared memory
_LANDING_LOAD_PTX = tl.constexpr("""{
.reg .u32 top, local;
mov.u32 top, %dynamic_smem_size;
mov.u32 local, global_smem;
add.u32 local, local, top;
add.u32 local, local, $1;
ld.shared.b32 $0, [local];
}""")

# `split_sum="fixed"`, per element, in inline PTX so that Triton's coalescing keeps the tile's layout for the memory
# operations (as tl.atomic_add and tl.store they moved the operands through shared memory, behind barriers):
# where $5 is not 0, the partial $6 added to the row's fp32 word at $4 and a release fence; then, where $3 is not 0,
# the addend $2 added to the row's 64-bit word at $1, whose previous value is $0
_FIX_ADD_PTX = tl.constexpr("""{
.reg .pred on, spill;
setp.ne.u32 on, $3, 0;
setp.ne.u32 spill, $5, 0;
@spill red.relaxed.gpu.global.add.f32 [$4], $6;
@spill fence.acq_rel.gpu;
mov.b64 $0, 0;
@on atom.relaxed.gpu.global.add.u64 $0, [$1], $2;
}""")
# where $1 (the last arriver) is not 0: after an acquire fence and where $2 is not 0, the row's fp32 word at $6 added to
# the fixed-point sum $3 (and set to 0 again); the row's bf16 result stored at $4 and its 64-bit word at $5 set to 0
_FIX_END_PTX = tl.constexpr("""{
.reg .pred last, spill;
.reg .f32 sum, spilled;
.reg .b16 result;
.reg .b64 zero;
setp.ne.u32 last, $1, 0;
setp.ne.u32 spill, $2, 0;
mov.f32 sum, $3;
mov.b64 zero, 0;
@spill fence.acq_rel.gpu;
@spill ld.relaxed.gpu.global.f32 spilled, [$6];
@spill add.f32 sum, sum, spilled;
@spill st.global.b32 [$6], zero;
cvt.rn.bf16.f32 result, sum;
@last st.global.b16 [$4], result;
@last st.global.b64 [$5], zero;
mov.b32 $0, 0;
}""")
# The 64-bit word a row's splits add into (SPLIT_K <= 8): bits 0-51 the sum of the splits' fixed-point partials,
# each partial FIX_SCALE (truncated) + FIX_BIAS (so each addend is in [0, 2^49) and 8 of them stay below 2^52); bits
# 52-55 the arrivals; bits 56-59 how many partials were outside (-FIX_LIMIT, FIX_LIMIT) or not finite, and were
# added to the row's fp32 word instead. With 16 splits the bias and the limit are halved (16 addends below 2^48
# each), and the last arrival carries the arrival bits into bit 56, so the last arriver counts the fp32 partials
# from the word its atomic returned plus its own
FIX_SCALE = tl.constexpr(1073741824.0)  # 2^30: the fixed point's fractional bits
FIX_LIMIT = tl.constexpr(262144.0)  # 2^18: |partial| 2^30 < 2^48
FIX_BIAS = tl.constexpr(1 << 48)
FIX_ARRIVAL = tl.constexpr(1 << 52)
FIX_FLOAT = tl.constexpr(1 << 56)
FIX_VALUE_MASK = tl.constexpr((1 << 52) - 1)


_BUFFERS: dict[tuple[str, str, int | None], torch.Tensor] = {}


def _kept_buffer(name: str, device: torch.device, n: int, dtype: torch.dtype) -> torch.Tensor:
    """A zeroed buffer of at least n elements, one per name and device, kept between calls (grown when a call needs
    more): the arrival counters and the fixed-point row words, which each launch leaves at zero again, and the
    `x_fixed` fragment blocks, which each launch writes before it reads them."""
    key = (name, device.type, device.index)
    buf = _BUFFERS.get(key)
    if buf is None or buf.numel() < n:
        buf = torch.zeros(max(n, 1024), dtype=dtype, device=device)
        _BUFFERS[key] = buf
    return buf


def _counters(device: torch.device, n: int) -> torch.Tensor:
    """Zeroed int32 arrival counters (each launch leaves them at zero again)."""
    return _kept_buffer("counters", device, n, torch.int32)


@triton.jit
def _bf16_lo(v):
    return (v << 16).to(tl.float32, bitcast=True)


@triton.jit
def _bf16_hi(v):
    return (v & -65536).to(tl.float32, bitcast=True)


@triton.jit
def _twin_dot(words_even, words_odd, x0, x1, x2, x3, lane, j, HALF: tl.constexpr):
    """The pure-Triton twin of the dot asm (interpreter): each element's row dot, sum (q - 8) x, from its n-tile's
    words, in fp32 (the PTX gives sum (128 + q) x and the scale step takes the offset out; the twin's scale step
    does not)."""
    part_even = tl.zeros([HALF, 128], dtype=tl.float32)  # per word, row lane // 4
    part_odd = tl.zeros([HALF, 128], dtype=tl.float32)
    for a in tl.static_range(4):
        if a == 0:
            pair = x0
        elif a == 1:
            pair = x1
        elif a == 2:
            pair = x2
        else:
            pair = x3
        x_lo = _bf16_lo(pair)
        x_hi = _bf16_hi(pair)
        part_even += (((words_even >> (4 * a)) & 0xF).to(tl.float32) - 8.0) * x_lo + (
            ((words_even >> (16 + 4 * a)) & 0xF).to(tl.float32) - 8.0
        ) * x_hi
        part_odd += (((words_odd >> (4 * a)) & 0xF).to(tl.float32) - 8.0) * x_lo + (
            ((words_odd >> (16 + 4 * a)) & 0xF).to(tl.float32) - 8.0
        ) * x_hi
    return _twin_rows(part_even, part_odd, lane, j, HALF)


@triton.jit
def _twin_rows(part_even, part_odd, lane, j, HALF: tl.constexpr):
    """Each element's row dot from the per-word parts of its pair's two n-tiles (the twin's mma)."""
    dot_even = tl.sum(tl.reshape(part_even, [HALF, 8, 16]), axis=2)  # [HALF, 8]: col = 16 row + 4 qq + j
    dot_odd = tl.sum(tl.reshape(part_odd, [HALF, 8, 16]), axis=2)
    want = (lane // 4)[:, :, None] == tl.arange(0, 8)[None, None, :]
    pick_even = tl.sum(tl.where(want, dot_even[:, None, :], 0.0), axis=2)  # [HALF, 128]
    pick_odd = tl.sum(tl.where(want, dot_odd[:, None, :], 0.0), axis=2)
    return tl.where(j < 2, pick_even, pick_odd)


@triton.jit
def _xq_block_offset(k):
    """The high byte of x_int at k (0..127) in a group's 256-byte fragment block (`_mma_dot_xq_ptx` reads it there):
    k = 32 j + 2 qq + 8 (p % 4) + p // 4 is nibble p of lane qq's word j, and its byte is p // 2 of b0 (p even) or b1
    (p odd) in block (j, qq)."""
    r = k % 32
    nibble = r // 8 + 4 * (r % 2)
    return 16 * (4 * (k // 32) + (r % 8) // 2) + 4 * (nibble % 2) + nibble // 2


@triton.jit
def _to_fixed(v, to_int):
    """round(v to_int) as int32, half away from zero, clamped to +-32767."""
    y = v * to_int
    y = tl.where(y >= 0, y + 0.5, y - 0.5)
    return tl.minimum(tl.maximum(y, -32767.0), 32767.0).to(tl.int32)


@triton.jit
def _quantize_split(xs, blocks, in_split, PAIRS: tl.constexpr):
    """x in 16-bit fixed point for one split (`x_fixed`): xs [groups, PAIRS] bf16 pairs; stores each group's 256-byte
    fragment block at blocks + 256 g (groups where in_split) and returns (sum x_int over each group, x_scale)."""
    x_lo = _bf16_lo(xs)  # k = 2 p
    x_hi = _bf16_hi(xs)  # k = 2 p + 1
    # a NaN counts as infinite: then to_int is 0, every x_int 0 and x_scale inf, so the output is NaN
    mag_lo = tl.where(x_lo != x_lo, float("inf"), tl.abs(x_lo))
    mag_hi = tl.where(x_hi != x_hi, float("inf"), tl.abs(x_hi))
    amax = tl.max(tl.maximum(tl.max(mag_lo, axis=1), tl.max(mag_hi, axis=1)), axis=0)
    to_int = tl.where(amax > 0, 32767.0 / amax, 1.0)
    int_lo = _to_fixed(x_lo, to_int)
    int_hi = _to_fixed(x_hi, to_int)
    p = tl.arange(0, PAIRS)[None, :]
    gs = tl.arange(0, xs.shape[0])[:, None]
    for half in tl.static_range(2):
        ints = int_lo if half == 0 else int_hi
        byte = blocks + gs * 256 + _xq_block_offset(2 * p + half)
        tl.store(byte, ((ints >> 8) & 255).to(tl.uint8), mask=in_split[:, None])
        tl.store(byte + 8, (ints & 255).to(tl.uint8), mask=in_split[:, None])
    return tl.sum(int_lo + int_hi, axis=1).to(tl.float32), 1.0 / to_int  # the sums exact: at most 128 * 32767


@triton.jit
def _xq_prepare_kernel(xpair_ptr, xq_ptr, xsum_ptr, xpair_row_stride, groups_per_split, GPS_PAD: tl.constexpr,
                       PAIRS: tl.constexpr, USE_PDL: tl.constexpr):
    """`x_fixed` 4: one program a split and row of x writes the split's fragment blocks (xq_ptr + 256 ((row splits
    + split) GPS_PAD + g)), its groups' sums of x_int (xsum_ptr + (row splits + split) GPS_PAD + g) and its x_scale
    (xsum_ptr + rows splits GPS_PAD + row splits + split), for the GEMV launched after it with `launch_pdl`; that
    kernel's dot asm waits for this grid (`griddepcontrol.wait`) before its first read."""
    if USE_PDL:
        gdc_launch_dependents()
    split = tl.program_id(0)
    row_m = tl.program_id(1)
    slot = row_m * tl.num_programs(0) + split
    gs = tl.arange(0, GPS_PAD)
    in_split = gs < groups_per_split
    xs = tl.load(xpair_ptr + row_m * xpair_row_stride + (split * groups_per_split + gs)[:, None] * PAIRS
                 + tl.arange(0, PAIRS)[None, :], mask=in_split[:, None], other=0)
    x_sums, x_scale = _quantize_split(xs, xq_ptr + slot * GPS_PAD * 256, in_split, PAIRS)
    tl.store(xsum_ptr + slot * GPS_PAD + gs, x_sums, mask=in_split)
    tl.store(xsum_ptr + tl.num_programs(0) * tl.num_programs(1) * GPS_PAD + slot, x_scale)


@triton.jit
def _twin_dot_xq(words_even, words_odd, frag, lane, j, HALF: tl.constexpr):
    """The pure-Triton twin of the `x_fixed` dot asm: each element's row dot sum (q - 8) x_int, with x_int read from
    the group's fragment block `frag` (bytes) where the PTX reads it: nibble p of lane qq's word j at byte p // 2 of
    b0 (p even) or b1 (p odd) in block (j, qq). Written from the registers' side, not through `_xq_block_offset`,
    so the interpreter run checks the prologue's stores against the asm's reads."""
    part_even = tl.zeros([HALF, 128], dtype=tl.float32)
    part_odd = tl.zeros([HALF, 128], dtype=tl.float32)
    block = frag + 16 * (4 * j + (lane % 4))
    for nibble in tl.static_range(8):
        byte = block + 4 * (nibble % 2) + nibble // 2
        high = tl.load(byte).to(tl.int32)
        x_int = (tl.where(high > 127, high - 256, high) * 256 + tl.load(byte + 8).to(tl.int32)).to(tl.float32)
        part_even += (((words_even >> (4 * nibble)) & 0xF).to(tl.float32) - 8.0) * x_int
        part_odd += (((words_odd >> (4 * nibble)) & 0xF).to(tl.float32) - 8.0) * x_int
    return _twin_rows(part_even, part_odd, lane, j, HALF)


@triton.jit
def _carried_scale(acc, dot, sz_loop, x_sum_tile, g, gi, n_out, groups_per_split, HALF: tl.constexpr,
                   SZ_BASE: tl.constexpr, L2_AHEAD: tl.constexpr, X_FIXED: tl.constexpr):
    """The `sz_carry` scale step of group g (its scale/zero words loaded a group earlier, in acc's spare slots 1 and
    3): apply them and load the next group's (with L2_AHEAD 1, after asking L2 for the group after that). sz_loop:
    the rows' scale words of group 0, one address an element, or with SZ_BASE each pair's row 0. X_FIXED: the dot is
    sum q x_int (offset 8, not 136); 4: and its x sum is the dot tile's element 1 (x_sum_tile unused)."""
    group_bytes = tl.cast(n_out, tl.int64) * 4
    if SZ_BASE:
        sz_addr = tl.broadcast_to(tl.cast(sz_loop + g * n_out, tl.int64), [HALF, 128])
    else:
        sz_addr = tl.cast(sz_loop + g * n_out, tl.int64)
    next_1 = tl.broadcast_to(tl.where(gi + 1 < groups_per_split, group_bytes, 0), [HALF, 128])
    tl.static_assert(L2_AHEAD == 1 or not X_FIXED, "int4_gemv mma x_fixed: with l2_ahead 1")
    if L2_AHEAD == 0:
        acc = tl.inline_asm_elementwise(_SCALE_CARRY_BASE_PTX if SZ_BASE else _SCALE_CARRY_PTX,
                                        _SCALE_CARRY_CONSTRAINTS, [dot, sz_addr, x_sum_tile, next_1, acc],
                                        dtype=tl.float32, is_pure=True, pack=4)
    else:
        next_2 = tl.broadcast_to(tl.where(gi + 2 < groups_per_split, 2 * group_bytes, 0), [HALF, 128])
        acc = tl.inline_asm_elementwise((_SCALE_CARRY_AFTER_BASE_X8S_PTX if SZ_BASE else _SCALE_CARRY_AFTER_X8S_PTX)
                                        if X_FIXED >= 4 else
                                        (_SCALE_CARRY_AFTER_BASE_X8_PTX if SZ_BASE else _SCALE_CARRY_AFTER_X8_PTX)
                                        if X_FIXED else
                                        (_SCALE_CARRY_AFTER_BASE_PTX if SZ_BASE else _SCALE_CARRY_AFTER_PTX),
                                        _SCALE_CARRY_AFTER_CONSTRAINTS,
                                        [dot, sz_addr, x_sum_tile, next_1, next_2, acc], dtype=tl.float32,
                                        is_pure=True, pack=4)
    return acc


@triton.jit
def _group_operands(x_row, g, sz_ptr, rows, rows_mask, x_off, n_out, HALF: tl.constexpr,
                    PAIRS: tl.constexpr, USE_PTX: tl.constexpr):
    """Group g's x pairs (4 tiles: pair a of each element's word) and scale/zero words, as [HALF, 128] tensors.
    PTX: `_PREFETCH_PTX` (the sz tile holds the even and odd rows' words in elements 0 and 1 of each lane); twin: the
    same x pairs and each element's own row's word, by tl.load."""
    if USE_PTX:
        x_addr = tl.broadcast_to(tl.cast(x_row + g * PAIRS, tl.int64), [HALF, 128])
        # each element's own row, clamped: rows past n_out read row n_out - 1, whose value is not stored
        sz_addr = tl.cast(sz_ptr + g * n_out + tl.minimum(rows, n_out - 1), tl.int64)
        x0, x1, x2, x3, szv = tl.inline_asm_elementwise(
            _PREFETCH_PTX, _PREFETCH_CONSTRAINTS, [x_addr, sz_addr], dtype=(tl.int32,) * 5, is_pure=True, pack=4)
    else:
        x_ptrs = x_row + g * PAIRS + x_off
        x0 = tl.broadcast_to(tl.load(x_ptrs), [HALF, 128])
        x1 = tl.broadcast_to(tl.load(x_ptrs + 4), [HALF, 128])
        x2 = tl.broadcast_to(tl.load(x_ptrs + 8), [HALF, 128])
        x3 = tl.broadcast_to(tl.load(x_ptrs + 12), [HALF, 128])
        szv = tl.load(sz_ptr + g * n_out + rows, mask=rows_mask, other=0)
    return x0, x1, x2, x3, szv


@triton.jit
def _store_rows(acc, out_ptr, partial_ptr, counter_ptr, n_out, out_row_stride, block, row_m, split,
                HALF: tl.constexpr, SPLIT_K: tl.constexpr, SUM_MODE: tl.constexpr, USE_PTX: tl.constexpr):
    """Store the block's 16 HALF rows from the [HALF, 128] accumulators (split-K: this split's fp32 partials, summed
    into out by the last arriving split of the block (SUM_MODE 0) or of each row (1), by `_split_sum_kernel` (2, and
    3: its launch asked for after the partials' store, not at the program's start), or through the cluster's shared
    memory (4: each split's CTA sums an eighth of the block's rows from the landing buffers), or by the split whose
    64-bit fixed-point atomic arrives last for the row (5))."""
    if SPLIT_K > 1 and SUM_MODE == 4 and USE_PTX:
        _cluster_rows(acc, out_ptr, n_out, out_row_stride, block, row_m, split, HALF, SPLIT_K)
    elif SPLIT_K > 1 and SUM_MODE == 5:
        _fixed_rows(acc, out_ptr, counter_ptr, n_out, out_row_stride, block, row_m, split, HALF, SPLIT_K, USE_PTX)
    else:
        _own_rows(acc, out_ptr, partial_ptr, counter_ptr, n_out, out_row_stride, block, row_m, split, HALF, SPLIT_K,
                  SUM_MODE, USE_PTX)


@triton.jit
def _cluster_rows(acc, out_ptr, n_out, out_row_stride, block, row_m, split, HALF: tl.constexpr,
                  SPLIT_K: tl.constexpr):
    """SUM_MODE 4: each of the block's rows from the [HALF, 128] accumulators straight into the landing buffer of the
    cluster's CTA that sums it (CTA r: rows [r OWN, (r + 1) OWN)), at slot (split, row % OWN); after the cluster
    barrier each CTA adds its rows' SPLIT_K slots and stores them. Only the lanes that hold a row's value store it
    (qq = 0, j even: the copies stay home), so no compaction of the tile comes first."""
    BLOCK_N: tl.constexpr = 16 * HALF
    OWN: tl.constexpr = BLOCK_N // SPLIT_K
    i = tl.arange(0, HALF)[:, None]
    col = tl.arange(0, 128)[None, :]
    qq = (col // 4) % 4
    j = col % 4
    row = (2 * i + j // 2) * 8 + col // 16  # element (i, 16 g + 4 qq + 2 jj + jlo) holds row (2 i + jj) 8 + g
    tl.inline_asm_elementwise(_CLUSTER_WAIT_PTX, "=r,r", [row_m], dtype=tl.int32, is_pure=False, pack=1)
    tl.inline_asm_elementwise(
        _CLUSTER_PUT_PTX, "=r,r,r,r,r",
        [acc.to(tl.int32, bitcast=True), row // OWN, (split * OWN + row % OWN) * 4 - BLOCK_N * 4,
         ((qq == 0) & (j % 2 == 0)).to(tl.int32)],
        dtype=tl.int32, is_pure=False, pack=1)
    tl.inline_asm_elementwise(_CLUSTER_SYNC_PTX, "=r,r", [row_m], dtype=tl.int32, is_pure=False, pack=1)
    s = tl.arange(0, SPLIT_K)[:, None]
    o = tl.arange(0, OWN)[None, :]
    landed = tl.inline_asm_elementwise(
        _LANDING_LOAD_PTX, "=r,r", [(s * OWN + o) * 4 - BLOCK_N * 4], dtype=tl.int32, is_pure=False, pack=1)
    mine = block * BLOCK_N + split * OWN + tl.arange(0, OWN)
    tl.store(out_ptr + row_m * out_row_stride + mine,
             tl.sum(landed.to(tl.float32, bitcast=True), axis=0).to(out_ptr.dtype.element_ty), mask=mine < n_out)


@triton.jit
def _fixed_rows(acc, out_ptr, word_ptr, n_out, out_row_stride, block, row_m, split, HALF: tl.constexpr,
                SPLIT_K: tl.constexpr, USE_PTX: tl.constexpr):
    """SUM_MODE 5: each row's value goes from the [HALF, 128] accumulators into the row's 64-bit word in one relaxed
    atomic that carries the partial (fixed point, in units of 1 / FIX_SCALE) and the arrival together, so the split
    whose atomic arrives last has the sum in the returned word plus its own addend: no partials' store, no barrier,
    no fence, no second round trip, and a sum that does not depend on the order of arrival. Atomic adds to one word
    are totally ordered, so the last sees all the others. A partial that fixed point cannot hold (|v| >= FIX_LIMIT,
    inf, NaN) is added to the row's fp32 word (the second half of word_ptr's buffer) behind a release fence and
    counted in bits 56-59; the last arriver adds that word after an acquire fence, so any input gives its fp32 sum
    (fixed point's error: under 2^-30 a split, truncated).

    Who issues it: a row's value sits in the 4 lanes of its n-tile row (qq) and in both columns of a pair (jlo); the
    tile's rows i = 4 r + w are the thread's repetitions r of warp w's row. Lane qq takes the values (r, jj) with
    (2 r + jj) // K == qq (K = R / 2 of them), so the picking and summing over r and jlo stay inside the thread: no
    shuffles, no layout change through shared memory, and every lane issues K atomics."""
    WARPS: tl.constexpr = 4
    R: tl.constexpr = HALF // WARPS  # 2 or 4 (block_n 128 or 256)
    K: tl.constexpr = R // 2  # values a lane takes
    BLOCK_N: tl.constexpr = 16 * HALF
    tile = tl.reshape(acc, [R, WARPS, 8, 4, 2, 2])  # (r, w, g, qq, jj, jlo): (4 r + w, 16 g + 4 qq + 2 jj + jlo)
    r6 = tl.arange(0, R)[:, None, None, None, None, None]
    qq6 = tl.arange(0, 4)[None, None, None, :, None, None]
    jj6 = tl.arange(0, 2)[None, None, None, None, :, None]
    jlo6 = tl.arange(0, 2)[None, None, None, None, None, :]
    mine = (jlo6 == 0) & ((2 * r6 + jj6) // K == qq6)
    value = tl.sum(tl.sum(tl.where(mine, tile, 0.0), axis=5), axis=0)  # [w, g, qq, jj]: one r or none a (qq, jj)
    w = tl.arange(0, WARPS)[:, None, None, None]
    g = tl.arange(0, 8)[None, :, None, None]
    qq = tl.arange(0, 4)[None, None, :, None]
    jj = tl.arange(0, 2)[None, None, None, :]
    r = qq * K // 2  # the repetition whose values lane qq took
    flat = block * BLOCK_N + (2 * (4 * r + w) + jj) * 8 + g
    holds = ((2 * r + jj) // K == qq) & (flat < n_out)
    word_ptrs = word_ptr + row_m * n_out + flat
    float_ptrs = (word_ptr + tl.num_programs(1) * n_out + row_m * n_out + flat).to(tl.pointer_type(tl.float32))
    WIDE: tl.constexpr = SPLIT_K // 9  # 1 for 16 splits: half the bias and the limit
    ok = tl.abs(value) < FIX_LIMIT / (1 + WIDE)  # false for NaN
    fixed = (tl.where(ok, value, 0.0) * FIX_SCALE).to(tl.int64) + (FIX_BIAS >> WIDE)
    addend = tl.where(ok, fixed, FIX_FLOAT) + FIX_ARRIVAL
    if USE_PTX:
        old = tl.inline_asm_elementwise(
            _FIX_ADD_PTX, "=l,l,l,r,l,r,f",
            [tl.cast(word_ptrs, tl.int64), addend, holds.to(tl.int32), tl.cast(float_ptrs, tl.int64),
             (holds & (ok == 0)).to(tl.int32), value],
            dtype=tl.int64, is_pure=False, pack=1)
    else:
        tl.atomic_add(float_ptrs, value, mask=holds & (ok == 0))
        old = tl.atomic_add(word_ptrs, addend, mask=holds, sem="acq_rel")
    last = holds & (((old >> 52) & 15) == SPLIT_K - 1)
    word = old + addend
    if WIDE:  # the 16th arrival carried into bit 56
        n_float = ((old >> 56) & 15) + (ok == 0).to(tl.int64)
    else:
        n_float = (word >> 56) & 15
    total = ((word & FIX_VALUE_MASK) - (SPLIT_K - n_float) * (FIX_BIAS >> WIDE)).to(tl.float32) / FIX_SCALE
    spill = last & (n_float != 0)
    out_ptrs = out_ptr + row_m * out_row_stride + flat
    if USE_PTX:
        tl.inline_asm_elementwise(
            _FIX_END_PTX, "=r,r,r,f,l,l,l",
            [last.to(tl.int32), spill.to(tl.int32), total, tl.cast(out_ptrs, tl.int64), tl.cast(word_ptrs, tl.int64),
             tl.cast(float_ptrs, tl.int64)],
            dtype=tl.int32, is_pure=False, pack=1)
    else:
        total += tl.load(float_ptrs, mask=spill, other=0.0)
        tl.store(out_ptrs, total.to(out_ptr.dtype.element_ty), mask=last)
        tl.store(word_ptrs, tl.zeros_like(old), mask=last)  # the next launch finds the words at zero
        tl.store(float_ptrs, tl.zeros_like(value), mask=spill)


@triton.jit
def _own_rows(acc, out_ptr, partial_ptr, counter_ptr, n_out, out_row_stride, block, row_m, split,
              HALF: tl.constexpr, SPLIT_K: tl.constexpr, SUM_MODE: tl.constexpr, USE_PTX: tl.constexpr):
    """_store_rows through global memory: the tile compacted to its rows, then stored (SPLIT_K 1) or summed."""
    BLOCK_N: tl.constexpr = 16 * HALF
    col = tl.arange(0, 128)[None, :]
    qq = (col // 4) % 4
    j = col % 4
    # compact the tile to its rows: element (i, 16 g + 4 qq + 2 jj + jlo) holds row (2 i + jj) 8 + g (qq = jlo = 0;
    # the 4 lanes of a row, and jlo = 1, hold copies). Summing over them before the store keeps the store's layout
    # from deciding the loop's: the mma asm needs the words' lane-exact layout.
    picked = tl.where((qq == 0) & (j % 2 == 0), acc, 0.0)
    per_row = tl.sum(tl.sum(tl.reshape(picked, [HALF, 8, 4, 2, 2]), axis=4), axis=2)  # [HALF, 8 (g), 2 (jj)]
    result = tl.reshape(tl.permute(per_row, (0, 2, 1)), [BLOCK_N])  # row 16 i + 8 jj + g of the block
    flat = block * BLOCK_N + tl.arange(0, BLOCK_N)
    flat_mask = flat < n_out
    out_ptrs = out_ptr + row_m * out_row_stride + flat
    if SPLIT_K == 1:
        tl.store(out_ptrs, result.to(out_ptr.dtype.element_ty), mask=flat_mask)
    else:
        tl.store(partial_ptr + (split * tl.num_programs(1) + row_m) * n_out + flat, result, mask=flat_mask)
        if SUM_MODE == 0 or SUM_MODE == 4:  # one ticket a row block, behind a block barrier (4: interpreted)
            tl.debug_barrier()  # every thread's partial before the one counter release
            ticket = block * tl.num_programs(1) + row_m
            arrived = tl.atomic_add(counter_ptr + ticket, 1, sem="acq_rel")
            if arrived == SPLIT_K - 1:
                s = tl.arange(0, SPLIT_K)
                parts = tl.load(
                    partial_ptr + (s[:, None] * tl.num_programs(1) + row_m) * n_out + flat[None, :],
                    mask=flat_mask[None, :],
                    other=0.0,
                    cache_modifier=".cg",
                )
                tl.store(out_ptrs, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty), mask=flat_mask)
                tl.store(counter_ptr + ticket, 0)
        elif SUM_MODE == 1:  # one ticket a row, taken by the thread that stored the row's partial: no barrier
            tickets = counter_ptr + row_m * n_out + flat
            if USE_PTX:  # one release fence for the thread's rows, their atomics in flight together, one acquire
                tl.inline_asm_elementwise(_FENCE_PTX, "=r,r", [row_m], dtype=tl.int32, is_pure=False, pack=1)
                arrived = tl.atomic_add(tickets, 1, mask=flat_mask, sem="relaxed")
                tl.inline_asm_elementwise(_FENCE_PTX, "=r,r", [row_m], dtype=tl.int32, is_pure=False, pack=1)
            else:
                arrived = tl.atomic_add(tickets, 1, mask=flat_mask, sem="acq_rel")
            last = flat_mask & (arrived == SPLIT_K - 1)
            total = tl.zeros([BLOCK_N], dtype=tl.float32)
            for s in tl.static_range(SPLIT_K):
                total += tl.load(partial_ptr + (s * tl.num_programs(1) + row_m) * n_out + flat, mask=last, other=0.0,
                                 cache_modifier=".cg")
            tl.store(out_ptrs, total.to(out_ptr.dtype.element_ty), mask=last)
            tl.store(tickets, 0, mask=last)
        elif SUM_MODE == 3 and USE_PTX:  # `_split_sum_kernel` sums them; its launch may start now
            gdc_launch_dependents()
        # SUM_MODE 2: `_split_sum_kernel`, the grid launched after this one, sums the partials


@triton.jit
def _int4_gemv_mma_kernel(
    xpair_ptr,
    w_ptr,
    sz_ptr,
    out_ptr,
    partial_ptr,
    counter_ptr,
    xsum_ptr,
    xq_ptr,
    n_out,
    n_k_outer,
    xpair_row_stride,
    out_row_stride,
    groups_per_split,
    GROUP: tl.constexpr,
    IKT: tl.constexpr,
    TILES: tl.constexpr,
    SPLIT_K: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    USE_PTX: tl.constexpr,
    GPS_PAD: tl.constexpr,
    PREFETCH: tl.constexpr,
    L2_AHEAD: tl.constexpr,
    L2_BULK: tl.constexpr,
    L2_FIRST: tl.constexpr,
    X_NEXT: tl.constexpr,
    SZ_EARLY: tl.constexpr,
    SZ_CARRY: tl.constexpr,
    X_REGS: tl.constexpr,
    XSUM_ASM: tl.constexpr,
    SZ_BASE: tl.constexpr,
    XSUM_MEM: tl.constexpr,
    WORDS_REGS: tl.constexpr,
    TWO_CHAINS: tl.constexpr,
    X_FIXED: tl.constexpr,
    SUM_MODE: tl.constexpr,
    STATIC_SHAPE: tl.constexpr,
):
    if STATIC_SHAPE[0]:  # compiled for (n_out, n_k_outer, groups_per_split): constant address steps and trip counts
        n_out = STATIC_SHAPE[0]
        n_k_outer = STATIC_SHAPE[1]
        groups_per_split = STATIC_SHAPE[2]
    if SUM_MODE == 2 and USE_PTX:  # the sum grid's programs may take their places now and wait for this grid's end
        gdc_launch_dependents()
    CHUNKS: tl.constexpr = GROUP // 128  # 128 k: 4 words per lane (32 k each)
    WPL: tl.constexpr = IKT // 2  # words per lane in one k-outer tile (16 IKT k)
    KO_WORDS: tl.constexpr = 32 * WPL  # words of one 8-row n-tile in one k-outer tile
    PAIRS: tl.constexpr = GROUP // 2  # x pairs of one group
    BLOCK_N: tl.constexpr = 8 * TILES
    HALF: tl.constexpr = TILES // 2  # pairs of n-tiles (one mma's 16 rows)
    if SUM_MODE == 4:  # a row block's splits are consecutive programs of axis 0, one cluster on the card
        block = tl.program_id(0) // SPLIT_K
        split = tl.program_id(0) % SPLIT_K
        if USE_PTX:
            tl.inline_asm_elementwise(_CLUSTER_ARRIVE_PTX, "=r,r", [split], dtype=tl.int32, is_pure=False, pack=1)
    else:
        block = tl.program_id(0)
        split = tl.program_id(2)
    row_m = tl.program_id(1)
    # [HALF, 128] tiles: row i is an n-tile pair, column 4 lane + j the lane's word j of a 128-k chunk (k = 32 j +
    # 2 qq + 8 (p % 4) + p // 4), so an n-tile's 512 contiguous bytes are one warp's 16-byte loads
    i = tl.arange(0, HALF)[:, None]
    col = tl.arange(0, 128)[None, :]
    lane = col // 4
    j = col % 4
    qq = lane % 4
    even_tile = block * TILES + 2 * i
    pair_mask = even_tile < n_out // 8
    odd_mask = even_tile + 1 < n_out // 8
    if WPL == 4:  # a chunk is one k-outer tile: the lane's 4 words are contiguous (written so, for 16-byte loads)
        w_col = col
    else:
        w_col = (j // WPL) * KO_WORDS + lane * WPL + j % WPL
    w_even = w_ptr + tl.cast(even_tile, tl.int64) * n_k_outer * KO_WORDS + w_col
    w_odd = w_even + n_k_outer * KO_WORDS
    x_row = xpair_ptr + row_m * xpair_row_stride
    # pair a (nibbles a, a + 4) of word j of lane qq in chunk c of a group: pair 64 c + 16 j + 4 a + qq
    x_off = 16 * j + qq
    g_start = split * groups_per_split
    # the sum of x over each group of this split (for the zero-point terms): once before the loop for up to 16 groups
    # a split, else per group inside it
    XSUM_FIRST: tl.constexpr = (GPS_PAD <= 16) and (not XSUM_ASM) and (X_FIXED < 4)
    tl.static_assert(XSUM_FIRST or not XSUM_MEM, "int4_gemv mma xsum_mem: the x sums computed up front")
    gs = tl.arange(0, GPS_PAD if XSUM_FIRST else 1)
    p = tl.arange(0, PAIRS)
    tl.static_assert(not X_FIXED or ((XSUM_FIRST or X_FIXED >= 4) and CHUNKS == 1 and SZ_CARRY
                                     and not (X_REGS or XSUM_MEM)),
                     "int4_gemv mma x_fixed: 128-k groups, up to 16 a split, with the plain sz_carry loop")
    if X_FIXED >= 4:  # written by _xq_prepare_kernel: this (row, split)'s blocks, x sums and x_scale
        slot = row_m * tl.num_programs(2) + split
        xq_prog = xq_ptr + slot * GPS_PAD * 256
        xsum_prog = xsum_ptr + slot * GPS_PAD
        x_scale_ptr = xsum_ptr + tl.num_programs(1) * tl.num_programs(2) * GPS_PAD + slot
    if USE_PTX and X_FIXED == 3:  # the pipeline's first groups of words asked of L2 before the prologue's work
        tiles = block * TILES + tl.arange(0, TILES)
        tile_first = w_ptr + (tl.cast(tiles, tl.int64) * n_k_outer + g_start * GROUP // (16 * IKT)) * KO_WORDS
        tl.inline_asm_elementwise(
            _BULK_PREFETCH_PTX, _BULK_PREFETCH_CONSTRAINTS,
            [tl.cast(tile_first, tl.int64),
             tl.full([TILES], tl.minimum(NUM_STAGES - 1, groups_per_split) * GROUP * 4, tl.int32),
             tl.where(tiles < n_out // 8, 1, 0)],
            dtype=tl.int32, is_pure=False, pack=1)
    if XSUM_FIRST:
        xs = tl.load(x_row + (g_start + gs)[:, None] * PAIRS + p[None, :], mask=(gs < groups_per_split)[:, None],
                     other=0)
        if X_FIXED:  # x_int = round(x / x_scale) in +-32767, one x_scale for the split; its fragment blocks
            xq_prog = xq_ptr + ((split * tl.num_programs(1) + row_m) * tl.num_programs(0) + block) * GPS_PAD * 256
            x_sums, x_scale = _quantize_split(xs, xq_prog, gs < groups_per_split, PAIRS)
            tl.debug_barrier()  # every block written before any lane of the program reads one
            if USE_PTX:  # and into L1: the stores went to L2 only, and each group's loads would wait for L2
                lines = xq_prog + tl.arange(0, GPS_PAD * 2) * 128
                tl.inline_asm_elementwise(_L1_PREFETCH_PTX, "=r,l", [tl.cast(lines, tl.int64)], dtype=tl.int32,
                                          is_pure=False, pack=1)
        else:
            x_sums = tl.sum(_bf16_lo(xs) + _bf16_hi(xs), axis=1)
        if XSUM_MEM:  # this program's slot: one scalar load a group in the loop instead of a block reduction
            xsum_slot = xsum_ptr + ((split * tl.num_programs(1) + row_m) * tl.num_programs(0) + block) * GPS_PAD
            tl.store(xsum_slot + gs, x_sums)
            tl.debug_barrier()
    # element (i, 4 lane + j) holds row lane // 4 of n-tile 2 i + j // 2 (j odd: a copy of j - 1)
    rows = (even_tile + j // 2) * 8 + lane // 4
    rows_mask = tl.where(j < 2, pair_mask, odd_mask)
    # each element's own row's scale/zero word of group 0, clamped: rows past n_out read row n_out - 1, whose value is
    # not stored; the loop only adds g * n_out
    sz_rows = sz_ptr + tl.minimum(rows, n_out - 1)
    acc = tl.zeros([HALF, 128], dtype=tl.float32)
    if USE_PTX and L2_FIRST:  # the first group's scale rows: their DRAM trip overlaps the words' first wait
        tl.inline_asm_elementwise(_FIRST_SZ_PREFETCH_PTX, _FIRST_SZ_PREFETCH_CONSTRAINTS,
                                  [tl.cast(sz_rows + g_start * n_out, tl.int64)], dtype=tl.int32, is_pure=False,
                                  pack=4)
    if USE_PTX and L2_BULK:  # ask L2 for the split's words of every n-tile and its scale rows, all at once
        tiles = block * TILES + tl.arange(0, TILES)
        tile_first = w_ptr + (tl.cast(tiles, tl.int64) * n_k_outer + g_start * GROUP // (16 * IKT)) * KO_WORDS
        tl.inline_asm_elementwise(
            _BULK_PREFETCH_PTX, _BULK_PREFETCH_CONSTRAINTS,
            [tl.cast(tile_first, tl.int64), tl.full([TILES], groups_per_split * GROUP * 4, tl.int32),
             tl.where(tiles < n_out // 8, 1, 0)],
            dtype=tl.int32, is_pure=False, pack=1)
        groups = tl.arange(0, GPS_PAD)
        sz_first = sz_ptr + (g_start + groups) * n_out + block * BLOCK_N
        tl.inline_asm_elementwise(
            _BULK_PREFETCH_PTX, _BULK_PREFETCH_CONSTRAINTS,
            [tl.cast(sz_first, tl.int64),
             tl.full([GPS_PAD], 4, tl.int32) * tl.minimum(BLOCK_N, n_out - block * BLOCK_N),
             tl.where(groups < groups_per_split, 1, 0)],
            dtype=tl.int32, is_pure=False, pack=1)
    if PREFETCH:  # each group's x pairs and scale/zero words loaded one group ahead, by the prefetch asm
        tl.static_assert(CHUNKS == 1, "int4_gemv mma prefetch: one 128-k chunk per group (group_size 128)")
        x0, x1, x2, x3, szv = _group_operands(x_row, g_start, sz_ptr, rows, rows_mask, x_off, n_out, HALF,
                                              PAIRS, USE_PTX)
        for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
            g = g_start + gi
            if XSUM_FIRST:
                x_sum = tl.sum(tl.where(gs == gi, x_sums, 0.0), axis=0)
            else:
                xg = tl.load(x_row + g * PAIRS + p)
                x_sum = tl.sum(_bf16_lo(xg) + _bf16_hi(xg), axis=0)
            g_next = g_start + tl.minimum(gi + 1, groups_per_split - 1)  # the last group loads itself again
            nx0, nx1, nx2, nx3, nszv = _group_operands(x_row, g_next, sz_ptr, rows, rows_mask, x_off, n_out,
                                                       HALF, PAIRS, USE_PTX)
            ko = (g * GROUP) // (16 * IKT)
            words_even = tl.load(w_even + ko * KO_WORDS, mask=pair_mask, other=0, eviction_policy="evict_first")
            words_odd = tl.load(w_odd + ko * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
            if USE_PTX:
                dot = tl.inline_asm_elementwise(
                    _MMA_DOT_X_PTX,
                    _MMA_DOT_X_CONSTRAINTS,
                    [words_even, words_odd, col, x0, x1, x2, x3, tl.zeros([HALF, 128], dtype=tl.float32)],
                    dtype=tl.float32,
                    is_pure=True,
                    pack=4,
                )
                acc = tl.inline_asm_elementwise(
                    _SCALE_REGS_PTX,
                    _SCALE_REGS_CONSTRAINTS,
                    [dot, szv, tl.broadcast_to(x_sum, [HALF, 128]), acc],
                    dtype=tl.float32,
                    is_pure=True,
                    pack=4,
                )
            else:
                dot = _twin_dot(words_even, words_odd, x0, x1, x2, x3, lane, j, HALF)
                acc += tl.where(j % 2 == 0, _bf16_lo(szv) * dot + _bf16_hi(szv) * x_sum, 0.0)
            x0, x1, x2, x3, szv = nx0, nx1, nx2, nx3, nszv
    elif USE_PTX and SZ_CARRY and WORDS_REGS:  # and the words of the next two groups in registers, no shared memory
        tl.static_assert(CHUNKS == 1 and SZ_BASE and not (X_REGS or XSUM_ASM or X_FIXED),
                         "int4_gemv mma words_regs: 128-k groups, with sz_base, without x_regs, xsum_asm, x_fixed")
        sz_loop = sz_ptr + tl.minimum(even_tile, n_out // 8 - 2) * 8  # each pair's row 0 (sz_base)
        acc = tl.inline_asm_elementwise(_CARRY_FIRST_PTX, _CARRY_FIRST_CONSTRAINTS,
                                        [tl.cast(sz_rows + g_start * n_out, tl.int64)], dtype=tl.float32,
                                        is_pure=True, pack=4)
        # registers A hold the even groups of the split, B the odd ones; each is refilled two groups on right after
        # its dot, so a group's words have the next group's dot and scale step to arrive (groups_per_split even)
        ko_a = (g_start * GROUP) // (16 * IKT)
        ko_b = ((g_start + 1) * GROUP) // (16 * IKT)
        words_even_a = tl.load(w_even + ko_a * KO_WORDS, mask=pair_mask, other=0, eviction_policy="evict_first")
        words_odd_a = tl.load(w_odd + ko_a * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
        words_even_b = tl.load(w_even + ko_b * KO_WORDS, mask=pair_mask, other=0, eviction_policy="evict_first")
        words_odd_b = tl.load(w_odd + ko_b * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
        for gi in tl.range(0, groups_per_split, 2, num_stages=1):
            for half in tl.static_range(2):
                g = g_start + gi + half
                if XSUM_MEM:
                    x_sum = tl.load(xsum_slot + gi + half)
                else:
                    x_sum = tl.sum(tl.where(gs == gi + half, x_sums, 0.0), axis=0)
                x_chunk = tl.broadcast_to(tl.cast(x_row + g * PAIRS, tl.int64), [HALF, 128])
                more = gi + half + 2 < groups_per_split
                ko_next = ((g + 2) * GROUP) // (16 * IKT)
                if half == 0:
                    dot = tl.inline_asm_elementwise(_MMA_DOT_PTX, _MMA_DOT_CONSTRAINTS,
                                                    [words_even_a, words_odd_a, col, x_chunk,
                                                     tl.zeros([HALF, 128], dtype=tl.float32)],
                                                    dtype=tl.float32, is_pure=True, pack=4)
                    words_even_a = tl.load(w_even + ko_next * KO_WORDS, mask=pair_mask & more, other=0,
                                           eviction_policy="evict_first")
                    words_odd_a = tl.load(w_odd + ko_next * KO_WORDS, mask=odd_mask & more, other=0,
                                          eviction_policy="evict_first")
                else:
                    dot = tl.inline_asm_elementwise(_MMA_DOT_PTX, _MMA_DOT_CONSTRAINTS,
                                                    [words_even_b, words_odd_b, col, x_chunk,
                                                     tl.zeros([HALF, 128], dtype=tl.float32)],
                                                    dtype=tl.float32, is_pure=True, pack=4)
                    words_even_b = tl.load(w_even + ko_next * KO_WORDS, mask=pair_mask & more, other=0,
                                           eviction_policy="evict_first")
                    words_odd_b = tl.load(w_odd + ko_next * KO_WORDS, mask=odd_mask & more, other=0,
                                          eviction_policy="evict_first")
                acc = _carried_scale(acc, dot, sz_loop, tl.broadcast_to(x_sum, [HALF, 128]), g, gi + half, n_out,
                                     groups_per_split, HALF, SZ_BASE, L2_AHEAD, False)
    elif USE_PTX and SZ_CARRY:  # the scale/zero words a group ahead in the acc tile's spare slots (1 and 3)
        if SZ_BASE:  # row 0 of each pair's even tile (a pair past N reads the last pair's, not stored)
            sz_loop = sz_ptr + tl.minimum(even_tile, n_out // 8 - 2) * 8
        else:
            sz_loop = sz_rows
        acc = tl.inline_asm_elementwise(_CARRY_FIRST_PTX, _CARRY_FIRST_CONSTRAINTS,
                                        [tl.cast(sz_rows + g_start * n_out, tl.int64)], dtype=tl.float32,
                                        is_pure=True, pack=4)
        if X_FIXED == 5:  # the B registers a group ahead: the first group's load their own
            f0 = tl.zeros([HALF, 128], dtype=tl.int32)
            f1 = tl.zeros([HALF, 128], dtype=tl.int32)
            f2 = tl.zeros([HALF, 128], dtype=tl.int32)
            f3 = tl.zeros([HALF, 128], dtype=tl.int32)
        elif X_FIXED >= 2:  # the first group's B registers (`_XQ_PREFETCH_PTX`)
            f0, f1, f2, f3 = tl.inline_asm_elementwise(
                _XQ_PREFETCH_PTX, _XQ_PREFETCH_CONSTRAINTS,
                [col + tl.zeros([HALF, 128], dtype=tl.int32), tl.broadcast_to(tl.cast(xq_prog, tl.int64), [HALF, 128])],
                dtype=(tl.int32,) * 4, is_pure=True, pack=4)
        if X_REGS:  # and the x pairs a group ahead in registers (`_X_PREFETCH_PTX`)
            tl.static_assert(CHUNKS == 1, "int4_gemv mma x_regs: one 128-k chunk per group (group_size 128)")
            x0, x1, x2, x3 = tl.inline_asm_elementwise(
                _X_PREFETCH_PTX, _X_PREFETCH_CONSTRAINTS,
                [col + tl.zeros([HALF, 128], dtype=tl.int32),
                 tl.broadcast_to(tl.cast(x_row + g_start * PAIRS, tl.int64), [HALF, 128])], dtype=(tl.int32,) * 4,
                is_pure=True, pack=4)
        for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
            g = g_start + gi
            if XSUM_MEM:
                x_sum = tl.load(xsum_slot + gi)
            elif XSUM_FIRST:
                x_sum = tl.sum(tl.where(gs == gi, x_sums, 0.0), axis=0)
            elif not (XSUM_ASM or X_FIXED >= 4):
                xg = tl.load(x_row + g * PAIRS + p)
                x_sum = tl.sum(_bf16_lo(xg) + _bf16_hi(xg), axis=0)
            dot = tl.zeros([HALF, 128], dtype=tl.float32)
            if X_REGS:  # the next group's x pairs (the last group loads its own again), then this group's dot
                x_next = tl.cast(x_row + (g_start + tl.minimum(gi + 1, groups_per_split - 1)) * PAIRS, tl.int64)
                nx0, nx1, nx2, nx3 = tl.inline_asm_elementwise(
                    _X_PREFETCH_PTX, _X_PREFETCH_CONSTRAINTS,
                    [col + tl.zeros([HALF, 128], dtype=tl.int32), tl.broadcast_to(x_next, [HALF, 128])],
                    dtype=(tl.int32,) * 4, is_pure=True, pack=4)
                ko = (g * GROUP) // (16 * IKT)
                words_even = tl.load(w_even + ko * KO_WORDS, mask=pair_mask, other=0, eviction_policy="evict_first")
                words_odd = tl.load(w_odd + ko * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
                dot = tl.inline_asm_elementwise(_MMA_DOT_X_PTX, _MMA_DOT_X_CONSTRAINTS,
                                                [words_even, words_odd, col, x0, x1, x2, x3, dot],
                                                dtype=tl.float32, is_pure=True, pack=4)
                x0, x1, x2, x3 = nx0, nx1, nx2, nx3
            elif XSUM_ASM:  # the dot asm also sums the group's x (one more mma, two shuffles): no x sums up front
                x_sum_tile = tl.zeros([HALF, 128], dtype=tl.float32)
                for c in tl.static_range(CHUNKS):
                    ko = (g * GROUP + 128 * c) // (16 * IKT)
                    words_even = tl.load(w_even + ko * KO_WORDS, mask=pair_mask, other=0,
                                         eviction_policy="evict_first")
                    words_odd = tl.load(w_odd + ko * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
                    x_chunk = tl.broadcast_to(tl.cast(x_row + g * PAIRS + 64 * c, tl.int64), [HALF, 128])
                    dot, x_sum_tile = tl.inline_asm_elementwise(
                        _MMA_DOT_XSUM_PTX, _MMA_DOT_XSUM_CONSTRAINTS, [words_even, words_odd, col, x_chunk, dot,
                                                                       x_sum_tile],
                        dtype=(tl.float32, tl.float32), is_pure=True, pack=4)
            elif X_FIXED:  # x_int on the integer tensor cores, from the group's fragment block (not pure: it reads
                # what the program stored before the loop, so it must stay after that barrier)
                ko = (g * GROUP) // (16 * IKT)
                words_even = tl.load(w_even + ko * KO_WORDS, mask=pair_mask, other=0, eviction_policy="evict_first")
                words_odd = tl.load(w_odd + ko * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
                if X_FIXED == 5:  # and the next group's B registers, loaded here for the next iteration
                    nxt = xq_prog + tl.minimum(gi + 1, groups_per_split - 1) * 256
                    dot, f0, f1, f2, f3 = tl.inline_asm_elementwise(
                        _MMA_DOT_XQ_AHEAD_PTX, _MMA_DOT_XQ_AHEAD_CONSTRAINTS,
                        [words_even, words_odd, col,
                         tl.broadcast_to(tl.cast(xq_prog + gi * 256, tl.int64), [HALF, 128]),
                         tl.broadcast_to(tl.cast(nxt, tl.int64), [HALF, 128]),
                         tl.broadcast_to(tl.cast(xsum_prog + gi, tl.int64), [HALF, 128]),
                         tl.broadcast_to(tl.where(gi == 0, 1, 0), [HALF, 128]), f0, f1, f2, f3],
                        dtype=(tl.float32, tl.int32, tl.int32, tl.int32, tl.int32), is_pure=False, pack=4)
                elif X_FIXED == 4:  # after waiting for the prepare grid; the group's x sum comes in elements 1, 3
                    frag = tl.broadcast_to(tl.cast(xq_prog + gi * 256, tl.int64), [HALF, 128])
                    dot = tl.inline_asm_elementwise(
                        _MMA_DOT_XQ_PREP_PTX, _MMA_DOT_XQ_PREP_CONSTRAINTS,
                        [words_even, words_odd, col, frag,
                         tl.broadcast_to(tl.cast(xsum_prog + gi, tl.int64), [HALF, 128])],
                        dtype=tl.float32, is_pure=False, pack=4)
                elif X_FIXED >= 2:  # the next group's B registers first (the last group loads its own again)
                    frag = tl.cast(xq_prog + tl.minimum(gi + 1, groups_per_split - 1) * 256, tl.int64)
                    nf0, nf1, nf2, nf3 = tl.inline_asm_elementwise(
                        _XQ_PREFETCH_PTX, _XQ_PREFETCH_CONSTRAINTS,
                        [col + tl.zeros([HALF, 128], dtype=tl.int32), tl.broadcast_to(frag, [HALF, 128])],
                        dtype=(tl.int32,) * 4, is_pure=True, pack=4)
                    dot = tl.inline_asm_elementwise(_MMA_DOT_XQ_REGS_PTX, _MMA_DOT_XQ_REGS_CONSTRAINTS,
                                                    [words_even, words_odd, col, f0, f1, f2, f3],
                                                    dtype=tl.float32, is_pure=True, pack=4)
                    f0, f1, f2, f3 = nf0, nf1, nf2, nf3
                else:
                    frag = tl.broadcast_to(tl.cast(xq_prog + gi * 256, tl.int64), [HALF, 128])
                    dot = tl.inline_asm_elementwise(_MMA_DOT_XQ_PTX, _MMA_DOT_XQ_CONSTRAINTS,
                                                    [words_even, words_odd, col, frag], dtype=tl.float32,
                                                    is_pure=False, pack=4)
            else:
                for c in tl.static_range(CHUNKS):
                    ko = (g * GROUP + 128 * c) // (16 * IKT)
                    words_even = tl.load(w_even + ko * KO_WORDS, mask=pair_mask, other=0,
                                         eviction_policy="evict_first")
                    words_odd = tl.load(w_odd + ko * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
                    x_chunk = tl.broadcast_to(tl.cast(x_row + g * PAIRS + 64 * c, tl.int64), [HALF, 128])
                    dot = tl.inline_asm_elementwise(_MMA_DOT_2C_PTX if TWO_CHAINS else _MMA_DOT_PTX,
                                                    _MMA_DOT_CONSTRAINTS, [words_even, words_odd, col, x_chunk, dot],
                                                    dtype=tl.float32, is_pure=True, pack=4)
            if X_FIXED >= 4:
                x_sum_tile = dot  # not read: the scale asm takes the x sum from the dot's element 1
            elif not XSUM_ASM:
                x_sum_tile = tl.broadcast_to(x_sum, [HALF, 128])
            acc = _carried_scale(acc, dot, sz_loop, x_sum_tile, g, gi, n_out, groups_per_split, HALF, SZ_BASE,
                                 L2_AHEAD, X_FIXED)
    else:
        for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
            g = g_start + gi
            if XSUM_FIRST:
                x_sum = tl.sum(tl.where(gs == gi, x_sums, 0.0), axis=0)
            elif X_FIXED >= 4:
                x_sum = tl.load(xsum_prog + gi)
            else:
                xg = tl.load(x_row + g * PAIRS + p)
                x_sum = tl.sum(_bf16_lo(xg) + _bf16_hi(xg), axis=0)
            dot = tl.zeros([HALF, 128], dtype=tl.float32)
            for c in tl.static_range(CHUNKS):
                ko = (g * GROUP + 128 * c) // (16 * IKT)  # the chunk's first k-outer tile
                words_even = tl.load(w_even + ko * KO_WORDS, mask=pair_mask, other=0, eviction_policy="evict_first")
                words_odd = tl.load(w_odd + ko * KO_WORDS, mask=odd_mask, other=0, eviction_policy="evict_first")
                if USE_PTX and SZ_EARLY and c == 0:  # and ask L2 for the next group's scale rows, first thing
                    x_chunk = tl.broadcast_to(tl.cast(x_row + g * PAIRS, tl.int64), [HALF, 128])
                    sz_ahead = tl.where(gi + 1 < groups_per_split, tl.cast(n_out, tl.int64) * 4, 0)
                    dot = tl.inline_asm_elementwise(
                        _MMA_DOT_SZNEXT_PTX,
                        _MMA_DOT_SZNEXT_CONSTRAINTS,
                        [words_even, words_odd, col, x_chunk, tl.cast(sz_rows + g * n_out, tl.int64),
                         tl.broadcast_to(sz_ahead, [HALF, 128]), dot],
                        dtype=tl.float32,
                        is_pure=True,
                        pack=4,
                    )
                elif USE_PTX and X_NEXT:  # and ask L1 for the next group's x (the same chunk of it)
                    x_chunk = tl.broadcast_to(tl.cast(x_row + g * PAIRS + 64 * c, tl.int64), [HALF, 128])
                    x_ahead = tl.where(gi + 1 < groups_per_split, PAIRS * 4, 0).to(tl.int64)
                    dot = tl.inline_asm_elementwise(
                        _MMA_DOT_XNEXT_PTX,
                        _MMA_DOT_XNEXT_CONSTRAINTS,
                        [words_even, words_odd, col, x_chunk, tl.broadcast_to(x_ahead, [HALF, 128]), dot],
                        dtype=tl.float32,
                        is_pure=True,
                        pack=4,
                    )
                elif USE_PTX:
                    x_chunk = tl.broadcast_to(tl.cast(x_row + g * PAIRS + 64 * c, tl.int64), [HALF, 128])
                    dot = tl.inline_asm_elementwise(
                        _MMA_DOT_PTX,
                        _MMA_DOT_CONSTRAINTS,
                        [words_even, words_odd, col, x_chunk, dot],
                        dtype=tl.float32,
                        is_pure=True,
                        pack=4,
                    )
                elif X_FIXED:  # pure-Triton twin of the x_fixed asm: x_int from the group's fragment block
                    dot += _twin_dot_xq(words_even, words_odd, xq_prog + gi * 256, lane, j, HALF)
                else:  # pure-Triton twin (interpreter): each element's row dot from its n-tile's words
                    x_ptrs = x_row + g * PAIRS + 64 * c + x_off
                    dot += _twin_dot(words_even, words_odd, tl.load(x_ptrs), tl.load(x_ptrs + 4),
                                     tl.load(x_ptrs + 8), tl.load(x_ptrs + 12), lane, j, HALF)
            if USE_PTX and L2_AHEAD == 0:
                sz_addr = tl.cast(sz_rows + g * n_out, tl.int64)
                acc = tl.inline_asm_elementwise(
                    _SCALE_PTX,
                    _SCALE_CONSTRAINTS,
                    [dot, sz_addr, tl.broadcast_to(x_sum, [HALF, 128]), acc],
                    dtype=tl.float32,
                    is_pure=True,
                    pack=4,
                )
            elif USE_PTX:  # the same step, asking L2 for the next groups' scale/zero words first
                sz_addr = tl.cast(sz_rows + g * n_out, tl.int64)
                group_bytes = tl.cast(n_out, tl.int64) * 4
                next_1 = tl.broadcast_to(tl.where(gi + 1 < groups_per_split, group_bytes, 0), [HALF, 128])
                x_sum_tile = tl.broadcast_to(x_sum, [HALF, 128])
                if L2_AHEAD == 1:
                    acc = tl.inline_asm_elementwise(_SCALE_PF1_PTX, _SCALE_PF1_CONSTRAINTS,
                                                    [dot, sz_addr, x_sum_tile, next_1, acc], dtype=tl.float32,
                                                    is_pure=True, pack=4)
                else:
                    next_2 = tl.broadcast_to(tl.where(gi + 2 < groups_per_split, 2 * group_bytes, 0), [HALF, 128])
                    acc = tl.inline_asm_elementwise(_SCALE_PF2_PTX, _SCALE_PF2_CONSTRAINTS,
                                                    [dot, sz_addr, x_sum_tile, next_1, next_2, acc],
                                                    dtype=tl.float32, is_pure=True, pack=4)
            else:
                sz = tl.load(sz_ptr + g * n_out + rows, mask=rows_mask, other=0)
                acc += tl.where(j % 2 == 0, _bf16_lo(sz) * dot + _bf16_hi(sz) * x_sum, 0.0)
    if X_FIXED >= 4:  # after the loop, whose asm waited for the prepare grid
        acc = acc * tl.load(x_scale_ptr)
    elif X_FIXED:  # x = x_scale x_int
        acc = acc * x_scale
    _store_rows(acc, out_ptr, partial_ptr, counter_ptr, n_out, out_row_stride, block, row_m, split, HALF, SPLIT_K,
                SUM_MODE, USE_PTX)


@triton.jit
def _int4_gemv_mma_groups_kernel(
    xpair_ptr,
    w_ptr,
    sz_ptr,
    out_ptr,
    partial_ptr,
    counter_ptr,
    n_out,
    n_k_outer,
    xpair_row_stride,
    out_row_stride,
    groups_per_split,
    GROUP: tl.constexpr,
    IKT: tl.constexpr,
    PAIRS_PER_PROGRAM: tl.constexpr,
    GROUP_ROWS: tl.constexpr,
    SPLIT_K: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    USE_PTX: tl.constexpr,
    EVEN_GROUPS: tl.constexpr,
    L2_AHEAD: tl.constexpr,
):
    """The same asm with groups as the tile's rows: row r of the [PAIRS_PER_PROGRAM * GROUP_ROWS, 128] tile is group
    r % GROUP_ROWS of an iteration for n-tile pair r // GROUP_ROWS, so one iteration reads GROUP_ROWS consecutive
    512-byte k-outer tiles of each n-tile (contiguous), its rows' mma chains are independent, and each row's x sum
    comes from the dot asm itself (`x_sum`)."""
    CHUNKS: tl.constexpr = GROUP // 128
    WPL: tl.constexpr = IKT // 2
    KO_WORDS: tl.constexpr = 32 * WPL
    KO_PER_GROUP: tl.constexpr = GROUP // (16 * IKT)  # k-outer tiles per group (128 k: 8 // IKT per chunk)
    PAIRS: tl.constexpr = GROUP // 2
    ROWS: tl.constexpr = PAIRS_PER_PROGRAM * GROUP_ROWS
    block = tl.program_id(0)
    row_m = tl.program_id(1)
    split = tl.program_id(2)
    r = tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, 128)[None, :]
    lane = col // 4
    j = col % 4
    qq = lane % 4
    n_tiles = n_out // 8
    even_tile = (block * PAIRS_PER_PROGRAM + r // GROUP_ROWS) * 2  # [ROWS, 1]
    pair_mask = even_tile < n_tiles
    odd_mask = even_tile + 1 < n_tiles
    gg = r % GROUP_ROWS
    g_start = split * groups_per_split
    g_last = g_start + groups_per_split - 1
    if WPL == 4:
        w_col = col
    else:
        w_col = (j // WPL) * KO_WORDS + lane * WPL + j % WPL
    # the addresses of iteration 0 (groups g_start + gg); iteration it adds it * GROUP_ROWS groups
    w_even = w_ptr + (tl.cast(even_tile, tl.int64) * n_k_outer + (g_start + gg) * KO_PER_GROUP) * KO_WORDS + w_col
    w_odd = w_even + n_k_outer * KO_WORDS
    x_row = xpair_ptr + row_m * xpair_row_stride
    # each element's own row, its tile clamped into the tensor: a missing tile reads the last one, not stored
    tile = tl.minimum(tl.where(j < 2, even_tile, even_tile + 1), n_tiles - 1)
    sz_rows = sz_ptr + tile * 8 + lane // 4
    rows_mask = tl.where(j < 2, pair_mask, odd_mask)
    acc = tl.zeros([ROWS, 128], dtype=tl.float32)
    for it in tl.range(0, tl.cdiv(groups_per_split, GROUP_ROWS), num_stages=NUM_STAGES):
        g = g_start + it * GROUP_ROWS + gg  # [ROWS, 1]
        if EVEN_GROUPS:
            g_read = g
            load_even, load_odd = pair_mask, odd_mask
        else:  # rows past the split read its last group (in bounds) and are not added
            g_read = tl.minimum(g, g_last)
            load_even, load_odd = pair_mask & (g <= g_last), odd_mask & (g <= g_last)
        dot = tl.zeros([ROWS, 128], dtype=tl.float32)
        x_sum = tl.zeros([ROWS, 128], dtype=tl.float32)
        for c in tl.static_range(CHUNKS):
            ko_step = (it * GROUP_ROWS * KO_PER_GROUP + c * (8 // IKT)) * KO_WORDS
            words_even = tl.load(w_even + ko_step, mask=load_even, other=0, eviction_policy="evict_first")
            words_odd = tl.load(w_odd + ko_step, mask=load_odd, other=0, eviction_policy="evict_first")
            if USE_PTX:
                x_chunk = tl.broadcast_to(tl.cast(x_row + g_read * PAIRS + 64 * c, tl.int64), [ROWS, 128])
                dot, x_sum = tl.inline_asm_elementwise(
                    _MMA_DOT_XSUM_PTX,
                    _MMA_DOT_XSUM_CONSTRAINTS,
                    [words_even, words_odd, col, x_chunk, dot, x_sum],
                    dtype=(tl.float32, tl.float32),
                    is_pure=True,
                    pack=4,
                )
            else:  # pure-Triton twin (interpreter)
                x_ptrs = x_row + g_read * PAIRS + 64 * c + 16 * j + qq
                dot += _twin_dot(words_even, words_odd, tl.load(x_ptrs), tl.load(x_ptrs + 4), tl.load(x_ptrs + 8),
                                 tl.load(x_ptrs + 12), lane, j, ROWS)
                xs = tl.load(x_row + g_read * PAIRS + 64 * c + tl.arange(0, 64)[None, :])  # [ROWS, 64]
                x_sum += tl.sum(_bf16_lo(xs) + _bf16_hi(xs), axis=1)[:, None]
        if USE_PTX and L2_AHEAD == 1:  # the same step, asking L2 for the row's scale/zero word one iteration on
            iteration_bytes = GROUP_ROWS * tl.cast(n_out, tl.int64) * 4
            ahead = tl.where(it + 1 < tl.cdiv(groups_per_split, GROUP_ROWS), iteration_bytes, 0)
            step = tl.inline_asm_elementwise(
                _SCALE_PF1_PTX,
                _SCALE_PF1_CONSTRAINTS,
                [dot, tl.cast(sz_rows + g_read * n_out, tl.int64), x_sum, tl.broadcast_to(ahead, [ROWS, 128]), acc],
                dtype=tl.float32,
                is_pure=True,
                pack=4,
            )
        elif USE_PTX:
            step = tl.inline_asm_elementwise(
                _SCALE_PTX,
                _SCALE_CONSTRAINTS,
                [dot, tl.cast(sz_rows + g_read * n_out, tl.int64), x_sum, acc],
                dtype=tl.float32,
                is_pure=True,
                pack=4,
            )
        else:
            sz = tl.load(sz_rows + g_read * n_out, mask=rows_mask, other=0)
            step = acc + tl.where(j % 2 == 0, _bf16_lo(sz) * dot + _bf16_hi(sz) * x_sum, 0.0)
        acc = step if EVEN_GROUPS else tl.where(g <= g_last, step, acc)
    # the pair's rows: sum its GROUP_ROWS rows of groups
    per_pair = tl.sum(tl.reshape(acc, [PAIRS_PER_PROGRAM, GROUP_ROWS, 128]), axis=1)
    _store_rows(per_pair, out_ptr, partial_ptr, counter_ptr, n_out, out_row_stride, block, row_m, split,
                PAIRS_PER_PROGRAM, SPLIT_K, 0, USE_PTX)


@triton.jit
def _split_sum_kernel(partial_ptr, out_ptr, n_out, out_row_stride, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
                      USE_PDL: tl.constexpr):
    """`split_sum="grid"`: out[m, n] = sum over s of partial[s, m, n] for BLOCK columns of one row of x, launched
    after the GEMV with `launch_pdl`: its programs wait (`griddepcontrol.wait`) for the GEMV grid's end, which
    replaces the GEMV's block barrier, release fence, arrival atomic and last-arriver loads."""
    if USE_PDL:
        gdc_wait()
    row_m = tl.program_id(1)
    n = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = n < n_out
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        total += tl.load(partial_ptr + (s * tl.num_programs(1) + row_m) * n_out + n, mask=mask, other=0.0,
                         cache_modifier=".cg")
    tl.store(out_ptr + row_m * out_row_stride + n, total.to(out_ptr.dtype.element_ty), mask=mask)


SPLIT_SUMS = {"block": 0, "rows": 1, "grid": 2, "grid_late": 3, "cluster": 4,
              "fixed": 5}  # make_kernel's split_sum: SUM_MODE
FIXED_SPLITS_MAX = 16  # the 64-bit word of split_sum "fixed": 4 arrival bits, 16 addends below 2^48
CLUSTER_MAX = 8  # the portable thread-block cluster size limit (sm_90)


def _launch_in_clusters(fn: triton.JITFunction, grid: tuple[int, int, int], cluster: int, landing_bytes: int,
                        num_warps: int, **kwargs: Any) -> None:
    """Launch `fn` on (grid[0] * cluster, grid[1], grid[2]) programs in thread-block clusters of `cluster` along axis
    0, with `landing_bytes` of dynamic shared memory past Triton's own. Triton's launcher takes the cluster size from
    the packed metadata's num_ctas (Triton 3.6: (num_warps, num_ctas, shared), the x grid multiplied by it); a kernel
    compiled with num_ctas=1 keeps its one-CTA layouts and sees %ctaid.x, which is what this needs."""
    compiled = fn.warmup(grid=grid, num_warps=num_warps, **kwargs)  # compiles once, then a cache lookup
    launcher = compiled.run  # loads the module: compiled.function is set from here on
    assert len(compiled.packed_metadata) == 3 and compiled.packed_metadata[1] == 1, (
        f"int4_gemv cluster launch: Triton's packed metadata {compiled.packed_metadata} is not (warps, 1, shared)")
    shared = -(-compiled.metadata.shared // 16) * 16 + landing_bytes
    assert compiled.metadata.shared > 49152 or shared <= 49152, (
        f"int4_gemv cluster launch: {shared} bytes of shared memory need the opt-in Triton sets only past 48 KiB")
    args = [kwargs[name] for name in fn.arg_names]
    stream = torch.cuda.current_stream().cuda_stream
    launcher(grid[0], grid[1], grid[2], stream, compiled.function, (num_warps, cluster, shared),
             compiled.launch_metadata(grid, stream, *args), triton.knobs.runtime.launch_enter_hook,
             triton.knobs.runtime.launch_exit_hook, *args)
SUM_BLOCK = 256  # columns per program of `_split_sum_kernel`: 32 programs of 2 warps at the headline
SUM_WARPS = 2


def make_kernel(
    *, block_n: int, split_k: int, num_warps: int, num_stages: int, prefetch: bool = False,
    group_rows: int | None = None, l2_ahead: int = 0, l2_bulk: bool = False, l2_first: bool = False,
    x_next: bool = False, sz_early: bool = False, sz_carry: bool = False,
    x_regs: bool = False, xsum_asm: bool = False, sz_base: bool = False, xsum_mem: bool = False,
    words_regs: bool = False, two_chains: bool = False, x_fixed: int = 0, split_sum: str = "block",
    specialize_shape: bool = False,
    maxnreg: int | None = None
) -> Callable[..., torch.Tensor]:
    """The candidate `kernel(x, w_int4, scales_and_zeros, *, group_size=128)` at one parameter set (`group_rows`: the
    groups-as-rows kernel, `block_n` // 16 n-tile pairs per program; `x_fixed` 1: the dot asm loads its B registers,
    2: they are loaded a group ahead, 3: and the first groups' words are asked of L2 before the prologue, 4: a
    grid before the GEMV prepares them, once for all row blocks, and the GEMV is launched with `launch_pdl`; 5: and
    the dot asm loads the next group's B registers; `split_sum`: who sums the split-K partials, the last arriving
    program of each row block ("block"), the last arriving thread of each row ("rows"), or a second grid launched
    with `launch_pdl`, which each program lets start at its beginning ("grid") or after its partials' store
    ("grid_late"), or the split whose 64-bit fixed-point atomic arrives last for a row ("fixed");
    `specialize_shape`: compiled for the weight's shape, one kernel per shape)."""
    assert group_rows is None or (block_n % 16 == 0 and not prefetch), "int4_gemv mma groups: block_n 16 p, no prefetch"
    assert l2_ahead in (0, 1, 2) and not (l2_ahead and prefetch), "int4_gemv mma: l2_ahead 0, 1 or 2, not with prefetch"
    assert not (sz_base or xsum_mem) or (sz_carry and not (x_regs or xsum_asm)), (
        "int4_gemv mma: sz_base and xsum_mem go with the plain sz_carry loop")
    assert not words_regs or (sz_base and group_rows is None), "int4_gemv mma: words_regs goes with sz_base"
    assert not two_chains or (sz_carry and not (x_regs or xsum_asm or words_regs)), (
        "int4_gemv mma: two_chains goes with the plain sz_carry loop")
    assert not (sz_carry and l2_ahead == 2), (
        "int4_gemv mma: the sz_carry loop asks L2 two groups ahead at l2_ahead 1; 2 compiles the same kernel")
    assert x_fixed in (0, 1, 2, 3, 4, 5), "int4_gemv mma: x_fixed 0 to 5"
    assert not x_fixed or (sz_carry and l2_ahead == 1 and not (x_regs or xsum_asm or xsum_mem or words_regs
                                                               or two_chains)), (
        "int4_gemv mma: x_fixed goes with the plain sz_carry loop, l2_ahead 1")
    assert split_sum in SPLIT_SUMS, f"int4_gemv mma: split_sum one of {sorted(SPLIT_SUMS)}"
    assert split_sum != "cluster" or (block_n % split_k == 0 and split_k <= CLUSTER_MAX and not maxnreg
                                      and not (x_fixed or xsum_mem)), (
        f"int4_gemv mma: split_sum cluster takes up to {CLUSTER_MAX} splits dividing block_n, no x_fixed or xsum_mem")
    assert split_sum != "fixed" or (split_k <= FIXED_SPLITS_MAX and num_warps == 4 and block_n in (128, 256)), (
        f"int4_gemv mma: split_sum fixed takes up to {FIXED_SPLITS_MAX} splits, 4 warps, 128 or 256 rows")
    assert split_sum == "block" or (group_rows is None and x_fixed < 4), (
        "int4_gemv mma: split_sum rows or grid go with the row-pair kernel, not after a prepare grid (x_fixed 4, 5)")

    def kernel(
        x: torch.Tensor, w_int4: torch.Tensor, scales_and_zeros: torch.Tensor, *, group_size: int = 128
    ) -> torch.Tensor:
        """x [M, K] times the packed int4 weight [N, K] transposed: [M, N] bf16, as _weight_int4pack_mm."""
        assert w_int4.dtype == torch.int32 and w_int4.ndim == 4 and w_int4.shape[2] == 32, (
            "int4_gemv: w_int4 must be CUDA tinygemm's int32 [N/8, K/(16*IKT), 32, IKT/2] layout "
            "(torch.ops.aten._convert_weight_to_int4pack)"
        )
        ikt = w_int4.shape[3] * 2
        n_out, n_k = w_int4.shape[0] * 8, w_int4.shape[1] * 16 * ikt
        assert x.ndim == 2 and x.shape[1] == n_k, f"int4_gemv: x must be [M, {n_k}], got {tuple(x.shape)}"
        assert x.dtype == torch.bfloat16, "int4_gemv: x must be bf16 (its pairs are the mma's A registers)"
        assert group_size % 128 == 0, f"int4_gemv: group_size {group_size} must be a multiple of 128"
        assert group_size == 128 or not prefetch, f"int4_gemv: this variant prefetches 128-k groups, not {group_size}"
        assert group_size == 128 or not x_fixed, f"int4_gemv: this variant takes 128-k groups, not {group_size}"
        n_groups = n_k // group_size
        assert scales_and_zeros.shape == (n_groups, n_out, 2), "int4_gemv: scales_and_zeros must be [K/g, N, 2]"
        assert scales_and_zeros.dtype == torch.bfloat16, "int4_gemv: scales_and_zeros must be bf16"
        splits = split_k
        while n_groups % splits:  # a power of two dividing the groups
            splits //= 2
        n_blocks, n_m = triton.cdiv(n_out, block_n), x.shape[0]
        w_int4 = w_int4.contiguous()
        sz = scales_and_zeros.contiguous().view(torch.int32).view(n_groups, n_out)  # scale: low half, zero: high
        xpair = x.contiguous().view(torch.int32)  # [M, K / 2]: (x[2i], x[2i + 1]) in the low and high halves
        out = torch.empty((n_m, n_out), dtype=x.dtype, device=x.device)
        use_ptx = os.environ.get("TRITON_INTERPRET", "0") != "1"
        mode = SPLIT_SUMS[split_sum] if splits > 1 else 0
        in_clusters = mode == 4 and use_ptx  # no partials in memory: they travel through the cluster's shared memory
        partial = (out if in_clusters or mode == 5  # 5: the sums travel in the fixed-point row words
                   else torch.empty((splits, n_m, n_out), dtype=torch.float32, device=x.device))
        if group_rows is not None:
            _int4_gemv_mma_groups_kernel[(n_blocks, n_m, splits)](
                xpair, w_int4, sz, out, partial, _counters(x.device, n_blocks * n_m), n_out, w_int4.shape[1],
                xpair.stride(0), out.stride(0), n_groups // splits, GROUP=group_size, IKT=ikt,
                PAIRS_PER_PROGRAM=block_n // 16, GROUP_ROWS=group_rows, SPLIT_K=splits, NUM_STAGES=num_stages,
                USE_PTX=use_ptx, EVEN_GROUPS=(n_groups // splits) % group_rows == 0, L2_AHEAD=l2_ahead,
                num_warps=num_warps)
            return out
        gps = n_groups // splits
        base = sz_base and n_out % 16 == 0  # whole n-tile pairs; else the per-row addresses
        in_regs = words_regs and base and group_size == 128 and gps % 2 == 0  # else the shared-memory pipeline
        xsum = (torch.empty(n_blocks * n_m * splits * triton.next_power_of_2(gps), dtype=torch.float32,
                            device=x.device) if xsum_mem else partial)
        assert gps <= 16 or not x_fixed, f"int4_gemv: x_fixed takes up to 16 groups a split, not {gps}"
        gps_pad = triton.next_power_of_2(gps)
        xq = _kept_buffer("xq", x.device, (1 if x_fixed >= 4 else n_blocks) * n_m * splits * gps_pad * 256
                          if x_fixed else 1, torch.uint8)
        if x_fixed >= 4:  # the x sums of each (row, split, group), then each (row, split)'s x_scale
            xsum = torch.empty(n_m * splits * (gps_pad + 1), dtype=torch.float32, device=x.device)
            _xq_prepare_kernel[(splits, n_m)](xpair, xq, xsum, xpair.stride(0), gps, GPS_PAD=gps_pad, PAIRS=64,
                                              USE_PDL=use_ptx, num_warps=4)
        args = dict(
            xpair_ptr=xpair,
            w_ptr=w_int4,
            sz_ptr=sz,
            out_ptr=out,
            partial_ptr=partial,
            counter_ptr=(_kept_buffer("fixed_sums", x.device, 2 * n_out * n_m, torch.int64) if mode == 5
                         else _counters(x.device, n_out * n_m if split_sum == "rows" else n_blocks * n_m)),
            xsum_ptr=xsum,
            xq_ptr=xq,
            n_out=n_out,
            n_k_outer=w_int4.shape[1],
            xpair_row_stride=xpair.stride(0),
            out_row_stride=out.stride(0),
            groups_per_split=n_groups // splits,
            GROUP=group_size,
            IKT=ikt,
            TILES=block_n // 8,
            SPLIT_K=splits,
            NUM_STAGES=num_stages,
            USE_PTX=use_ptx,
            GPS_PAD=triton.next_power_of_2(n_groups // splits),
            PREFETCH=prefetch,
            L2_AHEAD=l2_ahead,
            L2_BULK=l2_bulk,
            L2_FIRST=l2_first,
            X_NEXT=x_next,
            SZ_EARLY=sz_early,
            SZ_CARRY=sz_carry,
            X_REGS=x_regs,
            XSUM_ASM=xsum_asm,
            SZ_BASE=base,
            XSUM_MEM=xsum_mem and gps <= 16,
            WORDS_REGS=in_regs,
            TWO_CHAINS=two_chains,
            X_FIXED=x_fixed,
            SUM_MODE=mode,
            STATIC_SHAPE=(n_out, w_int4.shape[1], n_groups // splits) if specialize_shape else (0, 0, 0),
        )
        if in_clusters:  # the splits of a row block: one cluster, their partials summed through its shared memory
            _launch_in_clusters(_int4_gemv_mma_kernel, (n_blocks, n_m, 1), splits, block_n * 4, num_warps, **args)
            return out
        _int4_gemv_mma_kernel[(n_blocks * splits, n_m, 1) if mode == 4 else (n_blocks, n_m, splits)](
            **args,
            num_warps=num_warps,
            **({"maxnreg": maxnreg} if maxnreg else {}),
            **({"launch_pdl": True} if x_fixed >= 4 and use_ptx else {}),
        )
        if split_sum in ("grid", "grid_late") and splits > 1:
            _split_sum_kernel[(triton.cdiv(n_out, SUM_BLOCK), n_m)](
                partial, out, n_out, out.stride(0), SPLIT_K=splits, BLOCK=SUM_BLOCK, USE_PDL=use_ptx,
                num_warps=SUM_WARPS, launch_pdl=use_ptx)
        return out

    return kernel
