// paam_make_test_model — writes a small TorchScript model with random weights and its
// signature, so that tests (and anyone trying models) need neither Python's torch nor a
// download. Built with the model plugin, where libtorch is found (docs/models.md).
//
//   paam_make_test_model OUT.pt [--seed N] [--max-batch N] [--sample FILE [--batch N]]
//
// The model: images float32[-1,3,16,16] and offset float32[10] ->
//   logits   float32[-1,10] = linear(flatten(relu(conv3x3(images)))) + offset
//   features float32[-1,4]  = mean over H, W of relu(conv3x3(images))
// OUT.pt.json holds the signature (the varying batch bounded by --max-batch, default 4).
// --sample writes a fixed pseudo-random input of --batch images (default 1) and the outputs of
// running the saved model on it directly (torch::jit::load, no paamd), as JSON:
//   {"inputs": {"images": {"dtype", "shape", "data"}, "offset": {...}}, "outputs": {...}}
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "paam_make_test_model: %s\n"
               "usage: paam_make_test_model OUT.pt [--seed N] [--max-batch N] [--sample FILE [--batch N]]\n",
               why.c_str());
  std::exit(2);
}

long Number(const std::string& flag, const char* v, long lo, long hi) {
  char* end = nullptr;
  const long x = v != nullptr ? std::strtol(v, &end, 10) : 0;
  if (v == nullptr || end == v || *end != '\0' || x < lo || x > hi) {
    Usage(flag + " needs an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" +
          (v != nullptr ? v : "") + "'");
  }
  return x;
}

json TensorJson(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kFloat).contiguous();
  std::vector<double> data(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  return {{"dtype", "float32"}, {"shape", t.sizes().vec()}, {"data", data}};
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  if (!out) {
    std::fprintf(stderr, "paam_make_test_model: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, sample;
  long seed = 1, max_batch = 4, batch = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--seed") {
      seed = Number(a, next, 0, 1L << 30), ++i;
    } else if (a == "--max-batch") {
      max_batch = Number(a, next, 1, 4096), ++i;
    } else if (a == "--batch") {
      batch = Number(a, next, 1, 4096), ++i;
    } else if (a == "--sample") {
      if (next == nullptr) Usage("--sample needs a file");
      sample = next, ++i;
    } else if (a == "-h" || a == "--help") {
      Usage("writes a small TorchScript model with random weights, its signature OUT.pt.json, and a sample");
    } else if (!a.empty() && a[0] == '-') {
      Usage("unknown option '" + a + "'");
    } else if (out.empty()) {
      out = a;
    } else {
      Usage("one output file only, got '" + out + "' and '" + a + "'");
    }
  }
  if (out.empty()) Usage("name the model file to write, e.g. tiny.pt");

  torch::manual_seed(static_cast<uint64_t>(seed));
  torch::jit::Module m("PaamTinyNet");
  m.register_parameter("conv_w", torch::randn({4, 3, 3, 3}) * 0.2, false);
  m.register_parameter("conv_b", torch::randn({4}) * 0.1, false);
  m.register_parameter("fc_w", torch::randn({10, 4 * 16 * 16}) * 0.05, false);
  m.register_parameter("fc_b", torch::randn({10}) * 0.1, false);
  m.define(R"(
    def forward(self, images, offset):
        x = torch.relu(torch.conv2d(images, self.conv_w, self.conv_b, [1, 1], [1, 1]))
        features = torch.mean(x, [2, 3])
        logits = torch.linear(torch.flatten(x, 1), self.fc_w, self.fc_b) + offset
        return logits, features
  )");
  m.eval();
  try {
    m.save(out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paam_make_test_model: cannot write %s: %s\n", out.c_str(), e.what());
    return 1;
  }
  const json sig = {
      {"inputs",
       {{{"name", "images"}, {"dtype", "float32"}, {"shape", {-1, 3, 16, 16}}, {"max_shape", {max_batch, 3, 16, 16}}},
        {{"name", "offset"}, {"dtype", "float32"}, {"shape", {10}}}}},
      {"outputs",
       {{{"name", "logits"}, {"dtype", "float32"}, {"shape", {-1, 10}}, {"max_shape", {max_batch, 10}}},
        {{"name", "features"}, {"dtype", "float32"}, {"shape", {-1, 4}}, {"max_shape", {max_batch, 4}}}}}};
  WriteText(out + ".json", sig.dump(2));
  std::printf("wrote %s and its signature %s.json\n", out.c_str(), out.c_str());

  if (!sample.empty()) {
    torch::manual_seed(static_cast<uint64_t>(seed) + 1000);
    const torch::Tensor images = torch::rand({batch, 3, 16, 16});
    const torch::Tensor offset = torch::arange(10, torch::kFloat) * 0.5;
    torch::jit::Module loaded = torch::jit::load(out);  // what paamd will run: the saved file
    torch::NoGradGuard no_grad;
    const auto result = loaded.forward({images, offset}).toTuple();
    const json s = {{"inputs", {{"images", TensorJson(images)}, {"offset", TensorJson(offset)}}},
                    {"outputs",
                     {{"logits", TensorJson(result->elements()[0].toTensor())},
                      {"features", TensorJson(result->elements()[1].toTensor())}}}};
    WriteText(sample, s.dump());
    std::printf("wrote the sample input and its outputs to %s\n", sample.c_str());
  }
  return 0;
}
