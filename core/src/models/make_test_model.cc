// paam_make_test_model — writes a small TorchScript model with random weights and its
// signature, so that tests (and anyone trying models) need neither Python's torch nor a
// download. Built with the model plugin, where libtorch is found (docs/models.md).
//
//   paam_make_test_model OUT.pt [--seed N] [--max-batch N] [--sample FILE [--batch N]]
//                        [--arch tiny|convnet [--image R] [--width W] [--depth D] [--classes C]]
//
// --arch tiny (the default): images float32[-1,3,16,16] and offset float32[10] ->
//   logits   float32[-1,10] = linear(flatten(relu(conv3x3(images)))) + offset
//   features float32[-1,4]  = mean over H, W of relu(conv3x3(images))
// --arch convnet: a residual convolutional network whose cost the options set, for examples
// and benchmarks that need a small and a heavier model (docs/models.md): images
// float32[-1,3,R,R] (default R 64) -> a 3x3 stem of stride 2 to W channels (default 16), D
// residual blocks x + relu(conv3x3(x)) at R/2 x R/2 (default 4), then
//   features float32[-1,W] = mean over H, W;  logits float32[-1,C] = linear(features) (C 10).
// Its cost is about 18 * (R/2)^2 * W^2 * D floating-point operations per image.
// OUT.pt.json holds the signature (the varying batch bounded by --max-batch, default 4).
// --sample writes a fixed pseudo-random input of --batch images (default 1) and the outputs of
// running the saved model on it directly (torch::jit::load, no paamd), as JSON:
//   {"inputs": {"images": {"dtype", "shape", "data"}, "offset": {...}}, "outputs": {...}}
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
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
               "usage: paam_make_test_model OUT.pt [--seed N] [--max-batch N] [--sample FILE [--batch N]]\n"
               "                            [--arch tiny|convnet [--image R] [--width W] [--depth D] [--classes C]]\n",
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

json Spec(const char* name, std::vector<long> shape, long max_batch) {
  json s = {{"name", name}, {"dtype", "float32"}, {"shape", shape}};
  if (!shape.empty() && shape[0] == -1) {
    shape[0] = max_batch;
    s["max_shape"] = shape;
  }
  return s;
}

struct Options {
  std::string arch = "tiny";
  long max_batch = 4, image = 64, width = 16, depth = 4, classes = 10;
};

// A network, its signature and a sample input of `batch` images (named inputs, in order).
struct Made {
  torch::jit::Module module{"PaamTestNet"};
  json signature;
  std::vector<std::pair<std::string, torch::Tensor>> (*sample)(const Options&, long batch) = nullptr;
};

Made Tiny(const Options& o) {
  Made m;
  m.module = torch::jit::Module("PaamTinyNet");
  m.module.register_parameter("conv_w", torch::randn({4, 3, 3, 3}) * 0.2, false);
  m.module.register_parameter("conv_b", torch::randn({4}) * 0.1, false);
  m.module.register_parameter("fc_w", torch::randn({10, 4 * 16 * 16}) * 0.05, false);
  m.module.register_parameter("fc_b", torch::randn({10}) * 0.1, false);
  m.module.define(R"(
    def forward(self, images, offset):
        x = torch.relu(torch.conv2d(images, self.conv_w, self.conv_b, [1, 1], [1, 1]))
        features = torch.mean(x, [2, 3])
        logits = torch.linear(torch.flatten(x, 1), self.fc_w, self.fc_b) + offset
        return logits, features
  )");
  m.signature = {{"inputs", {Spec("images", {-1, 3, 16, 16}, o.max_batch), Spec("offset", {10}, o.max_batch)}},
                 {"outputs", {Spec("logits", {-1, 10}, o.max_batch), Spec("features", {-1, 4}, o.max_batch)}}};
  m.sample = [](const Options&, long batch) {
    return std::vector<std::pair<std::string, torch::Tensor>>{
        {"images", torch::rand({batch, 3, 16, 16})}, {"offset", torch::arange(10, torch::kFloat) * 0.5}};
  };
  return m;
}

Made Convnet(const Options& o) {
  Made m;
  m.module = torch::jit::Module("PaamConvNet");
  const double stem_scale = std::sqrt(2.0 / 27.0), block_scale = 0.5 * std::sqrt(2.0 / (9.0 * o.width));
  m.module.register_parameter("stem_w", torch::randn({o.width, 3, 3, 3}) * stem_scale, false);
  m.module.register_parameter("stem_b", torch::zeros({o.width}), false);
  std::string body = "    def forward(self, images):\n"
                     "        x = torch.relu(torch.conv2d(images, self.stem_w, self.stem_b, [2, 2], [1, 1]))\n";
  for (long i = 0; i < o.depth; ++i) {
    const std::string n = "block" + std::to_string(i);
    m.module.register_parameter(n + "_w", torch::randn({o.width, o.width, 3, 3}) * block_scale, false);
    m.module.register_parameter(n + "_b", torch::randn({o.width}) * 0.01, false);
    body += "        x = x + torch.relu(torch.conv2d(x, self." + n + "_w, self." + n + "_b, [1, 1], [1, 1]))\n";
  }
  m.module.register_parameter("fc_w", torch::randn({o.classes, o.width}) / std::sqrt(static_cast<double>(o.width)),
                              false);
  m.module.register_parameter("fc_b", torch::zeros({o.classes}), false);
  body += "        features = torch.mean(x, [2, 3])\n"
          "        logits = torch.linear(features, self.fc_w, self.fc_b)\n"
          "        return logits, features\n";
  m.module.define(body);
  m.signature = {{"inputs", {Spec("images", {-1, 3, o.image, o.image}, o.max_batch)}},
                 {"outputs", {Spec("logits", {-1, o.classes}, o.max_batch), Spec("features", {-1, o.width}, o.max_batch)}}};
  m.sample = [](const Options& opt, long batch) {
    return std::vector<std::pair<std::string, torch::Tensor>>{{"images", torch::rand({batch, 3, opt.image, opt.image})}};
  };
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, sample;
  long seed = 1, batch = 1;
  Options o;
  bool shaped = false;  // a convnet option given
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--seed") {
      seed = Number(a, next, 0, 1L << 30), ++i;
    } else if (a == "--max-batch") {
      o.max_batch = Number(a, next, 1, 4096), ++i;
    } else if (a == "--batch") {
      batch = Number(a, next, 1, 4096), ++i;
    } else if (a == "--sample") {
      if (next == nullptr) Usage("--sample needs a file");
      sample = next, ++i;
    } else if (a == "--arch") {
      if (next == nullptr || (std::string(next) != "tiny" && std::string(next) != "convnet")) {
        Usage(std::string("--arch must be tiny or convnet, got '") + (next != nullptr ? next : "") + "'");
      }
      o.arch = next, ++i;
    } else if (a == "--image") {
      o.image = Number(a, next, 4, 1024), ++i, shaped = true;
    } else if (a == "--width") {
      o.width = Number(a, next, 1, 1024), ++i, shaped = true;
    } else if (a == "--depth") {
      o.depth = Number(a, next, 0, 256), ++i, shaped = true;
    } else if (a == "--classes") {
      o.classes = Number(a, next, 1, 100000), ++i, shaped = true;
    } else if (a == "-h" || a == "--help") {
      Usage("writes a TorchScript model with random weights, its signature OUT.pt.json, and a sample");
    } else if (!a.empty() && a[0] == '-') {
      Usage("unknown option '" + a + "'");
    } else if (out.empty()) {
      out = a;
    } else {
      Usage("one output file only, got '" + out + "' and '" + a + "'");
    }
  }
  if (out.empty()) Usage("name the model file to write, e.g. tiny.pt");
  if (shaped && o.arch != "convnet") Usage("--image, --width, --depth and --classes go with --arch convnet");
  if (batch > o.max_batch && !sample.empty()) {
    Usage("--batch " + std::to_string(batch) + " is over --max-batch " + std::to_string(o.max_batch));
  }

  torch::manual_seed(static_cast<uint64_t>(seed));
  Made m = o.arch == "convnet" ? Convnet(o) : Tiny(o);
  m.module.eval();
  try {
    m.module.save(out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paam_make_test_model: cannot write %s: %s\n", out.c_str(), e.what());
    return 1;
  }
  WriteText(out + ".json", m.signature.dump(2));
  std::printf("wrote %s and its signature %s.json\n", out.c_str(), out.c_str());

  if (!sample.empty()) {
    torch::manual_seed(static_cast<uint64_t>(seed) + 1000);
    const auto inputs = m.sample(o, batch);
    torch::jit::Module loaded = torch::jit::load(out);  // what paamd will run: the saved file
    torch::NoGradGuard no_grad;
    std::vector<c10::IValue> args;
    json in;
    for (const auto& [name, t] : inputs) {
      args.emplace_back(t);
      in[name] = TensorJson(t);
    }
    const auto result = loaded.forward(std::move(args)).toTuple();
    json outs;
    for (size_t i = 0; i < result->elements().size(); ++i) {
      outs[m.signature["outputs"][i]["name"].get<std::string>()] = TensorJson(result->elements()[i].toTensor());
    }
    WriteText(sample, json{{"inputs", in}, {"outputs", outs}}.dump());
    std::printf("wrote the sample input and its outputs to %s\n", sample.c_str());
  }
  return 0;
}
