#include "flashtrain/distributed/bucket_plan.h"

#include <sstream>
#include <stdexcept>

namespace flashtrain::distributed {

BucketPlan plan_buckets(const std::vector<ParamSpec>& params, const BucketOptions& options) {
  if (options.bucket_bytes <= 0 || options.first_bucket_bytes <= 0)
    throw std::invalid_argument("plan_buckets: bucket capacities must be positive");
  BucketPlan plan;
  plan.bucket_of.assign(params.size(), 0);
  plan.entry_of.assign(params.size(), 0);
  Bucket current;
  bool open = false;
  auto capacity = [&] {
    return plan.buckets.empty() ? options.first_bucket_bytes : options.bucket_bytes;
  };
  auto close = [&] {
    if (open) plan.buckets.push_back(std::move(current));
    current = Bucket{};
    open = false;
  };
  for (std::size_t k = params.size(); k-- > 0;) {
    const ParamSpec& p = params[k];
    if (p.numel < 0 || p.element_size <= 0)
      throw std::invalid_argument("plan_buckets: parameter '" + p.name + "' has a bad size");
    const std::int64_t bytes = p.numel * p.element_size;
    if (open && (p.dtype != current.dtype || p.element_size != current.element_size ||
                 current.bytes() + bytes > capacity()))
      close();
    if (!open) {
      open = true;
      current.dtype = p.dtype;
      current.element_size = p.element_size;
    }
    plan.bucket_of[k] = plan.buckets.size();
    plan.entry_of[k] = current.entries.size();
    current.entries.push_back(BucketEntry{k, current.numel, p.numel});
    current.numel += p.numel;
    if (current.bytes() >= capacity()) close();  // full (or one oversized parameter)
  }
  close();
  return plan;
}

std::string describe(const BucketPlan& plan, const std::vector<ParamSpec>& params) {
  std::ostringstream out;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    out << "bucket " << b << ": " << bucket.entries.size() << " params, " << bucket.bytes()
        << " bytes:";
    for (std::size_t e = 0; e < bucket.entries.size(); ++e)
      out << (e ? ", " : " ") << params[bucket.entries[e].param].name;
    out << "\n";
  }
  return out.str();
}

}  // namespace flashtrain::distributed
