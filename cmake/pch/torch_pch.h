// The precompiled header shared by every C++ target (see FlashtrainTargets.cmake).
// Only stable, heavy, third-party headers belong here.
#pragma once
#include <torch/torch.h>
