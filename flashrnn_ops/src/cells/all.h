// Every cell's definition, each cell's header once, and the list of cells
// (flashrnn/cell_list.h). Plain C++ and CUDA, no torch: the tuner and the
// kernel instantiations include this, not registry.h (which pulls in ATen).
#pragma once

#include "flashrnn/cell_list.h"

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"
