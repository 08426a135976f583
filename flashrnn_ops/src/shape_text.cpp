#include "shape_text.h"

#include <sstream>

namespace flashrnn {

std::string shape_of(at::IntArrayRef sizes) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < sizes.size(); ++i) s << (i ? ", " : "") << sizes[i];
  s << "]";
  return s.str();
}

std::string shape_of(const at::Tensor& t) { return t.defined() ? shape_of(t.sizes()) : "an undefined tensor"; }

}  // namespace flashrnn
