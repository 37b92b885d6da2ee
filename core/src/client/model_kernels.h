// client/model_kernels.h — ClientOptions::models into kernel declarations (infer.cc).
#pragma once

#include "paam/client.h"

namespace paam {

// Asks paamd for the signatures of options->models and appends a KernelDecl for each model
// not already in options->kernels, sized from its published max_input_bytes/max_output_bytes.
// Errors: kUnknownKernel naming the models paamd serves, kInvalidArgument for direct mode or a
// model whose sizes are unbounded, and whatever the query meets.
Status AddModelKernels(ClientOptions* options);

}  // namespace paam
