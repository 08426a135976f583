#pragma once
// Gradient buckets: which parameters share a flat buffer, and where in it.
// Torch-free so the plan is testable by hand. Gradients become ready back to
// front, so buckets fill in reverse registration order; the first bucket is
// small so the first all-reduce starts early in the backward pass.
#include <cstdint>
#include <string>
#include <vector>

namespace flashtrain::distributed {

struct ParamSpec {
  std::string name;
  std::int64_t numel = 0;
  std::int64_t element_size = 4;  // bytes
  int dtype = 0;                  // a tag; buckets never mix dtypes
};

struct BucketOptions {
  std::int64_t bucket_bytes = 25ll << 20;       // ~25 MiB
  std::int64_t first_bucket_bytes = 1ll << 20;  // ~1 MiB
};

struct BucketEntry {
  std::size_t param = 0;     // index into the parameter list (registration order)
  std::int64_t offset = 0;   // in elements, into the bucket's flat buffer
  std::int64_t numel = 0;
};

struct Bucket {
  std::vector<BucketEntry> entries;  // in the order gradients become ready
  std::int64_t numel = 0;
  std::int64_t element_size = 4;
  int dtype = 0;
  std::int64_t bytes() const { return numel * element_size; }
};

struct BucketPlan {
  std::vector<Bucket> buckets;  // bucket 0 fills first (holds the last parameters)
  // Per parameter (registration order): its bucket and entry within it.
  std::vector<std::size_t> bucket_of;
  std::vector<std::size_t> entry_of;
};

// Deterministic: the same parameters and options give the same plan on every
// rank. A parameter larger than its bucket's capacity gets a bucket of its own;
// a change of dtype closes the bucket. Zero-element parameters are placed
// (numel 0) so every parameter has a bucket. Throws std::invalid_argument on
// negative sizes or non-positive capacities.
BucketPlan plan_buckets(const std::vector<ParamSpec>& params, const BucketOptions& options = {});

// One line per bucket: "bucket 0: 3 params, 1048576 bytes: a, b, c".
std::string describe(const BucketPlan& plan, const std::vector<ParamSpec>& params);

}  // namespace flashtrain::distributed
