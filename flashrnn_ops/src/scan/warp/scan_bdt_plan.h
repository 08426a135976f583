// How the [B, D, T] warp kernels (scan_bdt_{forward,backward}_kernel.cuh) cut a
// problem; plain C++ shared by the launcher, the kernels and the CPU tests.
//
// Every channel is a row of T contiguous steps. A warp works on one row at a
// time in iterations of 32·V steps (V = 16 bytes / element: 4 fp32, 8 bf16/fp16):
// lane l holds steps [32·V·i + l·V, +V) of iteration i in scan order, so each
// warp-wide 16-byte load or store covers 512 contiguous bytes — every 32-byte
// sector is requested once. A warp-wide scan of the lanes' composed maps gives
// each lane the state entering its V steps.
//
// Two ways to spread rows over the GPU:
//   march     one warp per row walks the whole row, the state in a register,
//             the next `depth` iterations' loads in flight (a register ring).
//             Nothing between warps. Used when there are enough rows to fill
//             the GPU.
//   lookback  a row is cut into items of kBdtLookbackWarps parts of
//             `item_iterations` iterations; a block of as many warps stages one
//             item in shared memory, publishes its total map and learns the
//             state entering it by a decoupled look-back over its predecessors
//             (scan_warp_lookback.cuh). Items are numbered row-fastest and
//             claimed from a ticket counter by persistent blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "scan/scan_params.h"

namespace flashrnn::scan_kernels {

enum class BdtMode { kAuto, kMarch, kLookback };

// Run-time choices of the [B, D, T] path (scan_variant.h picks them).
struct BdtChoice {
  BdtMode mode = BdtMode::kAuto;
  int depth = 4;            // march: iterations whose loads are in flight (2 or 4)
  int item_iterations = 16;  // lookback: iterations per warp of an item (8 or 16)
  int blocks_per_sm = 0;     // lookback: at most this many blocks per SM (0: as many as fit)
};

constexpr int kBdtWarpsPerBlock = 8;
constexpr int kBdtThreadsPerBlock = 32 * kBdtWarpsPerBlock;
// Warps per block of the lookback kernels, which is also the number of parts
// of an item: each warp stages item_iterations iterations of it (16 KB forward,
// 24 KB backward at 16 iterations of fp32), and the block does one look-back
// for the whole item.
constexpr int kBdtLookbackWarps = 2;
// About the warps per SM the march kernels keep resident (their launch bounds
// allow 16 to 32).
constexpr int kBdtMarchWarpsPerSm = 24;

struct BdtPlan {
  int vector = 4;                // V: elements per lane per iteration
  int64_t iteration_steps = 128;  // 32·V
  BdtMode mode = BdtMode::kMarch;
  int depth = 4;                 // march
  int item_iterations = 16;      // lookback
  int blocks_per_sm = 0;         // lookback
  int64_t rows = 0;              // B·D
  int64_t steps = 0;             // T
  int64_t item_steps = 0;        // lookback: item_iterations·32·V; march: T
  int64_t chunks = 1;            // items per row
  int64_t items = 0;             // rows·chunks
};

// `sms`: multiprocessors of the device (the march / lookback choice in kAuto).
inline BdtPlan make_bdt_plan(const ScanShape& shape, const BdtChoice& choice, int sms) {
  BdtPlan p;
  p.vector = 16 / element_bytes(shape.dtype);
  p.iteration_steps = 32 * int64_t(p.vector);
  p.rows = shape.batch * shape.channels;
  p.steps = shape.steps;
  p.depth = choice.depth;
  p.item_iterations = choice.item_iterations;
  p.blocks_per_sm = choice.blocks_per_sm;
  const int64_t item_steps = kBdtLookbackWarps * p.iteration_steps * p.item_iterations;
  const int64_t chunks = (shape.steps + item_steps - 1) / item_steps;
  BdtMode mode = choice.mode;
  if (mode == BdtMode::kAuto) {
    // Half the resident warps, each with `depth` iterations in flight, already
    // keep more bytes in flight than the memory system needs.
    const int64_t enough_rows = int64_t(sms) * kBdtMarchWarpsPerSm / 2;
    mode = (p.rows >= enough_rows || chunks <= 1) ? BdtMode::kMarch : BdtMode::kLookback;
  }
  p.mode = mode;
  if (mode == BdtMode::kMarch) {
    p.item_steps = shape.steps;
    p.chunks = 1;
  } else {
    p.item_steps = item_steps;
    p.chunks = chunks < 1 ? 1 : chunks;
  }
  p.items = p.rows * p.chunks;
  return p;
}

// Where a lookback warp keeps slot s (16 bytes: V steps) of an item of
// `iterations` iterations in shared memory (scan_warp_staging.cuh): XOR-swizzled
// so that the coalesced copies (lane l, iteration k: s = 32·k + l) and the
// transposed reads (lane l, step m of its run: s = l·iterations + m) both put
// the 8 lanes of a quarter-warp in 8 different 16-byte bank groups. Needs
// iterations to be a multiple of 8; a bijection on [0, 32·iterations).
constexpr int item_slot_swizzle(int s, int iterations) { return s ^ ((s / iterations) & 7); }

// The look-back's scratch memory, all zeroed before each launch: a ticket
// counter, then one 16-byte descriptor per item (status, its map's a and b, the
// state leaving it). March plans need none.
struct BdtLookbackLayout {
  size_t ticket = 0;
  size_t descriptors = 0;
  size_t total_bytes = 0;  // all of it is zeroed
};

inline BdtLookbackLayout bdt_lookback_layout(const BdtPlan& p) {
  BdtLookbackLayout l;
  if (p.mode != BdtMode::kLookback) return l;
  l.ticket = 0;
  l.descriptors = 16;
  l.total_bytes = l.descriptors + size_t(p.items) * 16;
  return l;
}

}  // namespace flashrnn::scan_kernels
