// common/cli.h — what the command-line programs (paamd, the benches, the C++ executor) share on
// top of CLI11: one help layout and one way to report a bad command line.
//
//   CLI::App app("what the program does", "paamd");
//   paam::cli::Setup(app);
//   app.add_option_function<std::string>("--buckets", ...)->type_name("N");
//   paam::cli::ParseOrExit(app, argc, argv, 2, [&] { /* rules across options */ });
//
// A value is checked in its option's callback, which throws paam::cli::Bad("--x needs ...") with
// a message that names the option and the value: the message is printed as it is.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace paam::cli {

// "usage: NAME [options] ..." first, then the description, then the options; continuation
// lines of an option's description (written with '\n') are indented under the first.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() {
    label("Usage", "usage");
    label("OPTIONS", "options");
    column_width(27);
  }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    const std::string description = app->get_description();
    return CLI::Formatter::make_usage(app, std::move(name)) + (description.empty() ? "" : "\n" + description + "\n");
  }
  std::string make_description(const CLI::App*) const override { return {}; }
};

// The layout above; an option given twice keeps its last value (as the programs always did)
// unless it says otherwise; words that are no option are collected, and ParseOrExit refuses them.
inline void Setup(CLI::App& app) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_help_flag("-h,--help", "print this help and exit");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.allow_extras();
}

// A check for an integer option: at least `least` ("--iters: must be at least 1, got '0'").
// A value that is no integer is left to the option's conversion, which refuses it.
inline CLI::Validator AtLeast(long long least) {
  return CLI::Validator(
      [least](std::string& v) -> std::string {
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        if (end == v.c_str() || *end != '\0' || x >= least) return {};
        return "must be at least " + std::to_string(least) + ", got '" + v + "'";
      },
      "");
}

// A bad value or combination: `message` names the option and says what it needs.
[[noreturn]] inline void Bad(std::string message) { throw CLI::ValidationError(std::move(message)); }

// Parses argv, then runs `check` (the rules across options; it calls Bad). --help prints the help
// on stdout and exits 0. A bad command line prints "NAME: what was wrong", a blank line and the
// help on stderr, and exits with `usage_status`.
inline void ParseOrExit(CLI::App& app, int argc, char** argv, int usage_status,
                        const std::function<void()>& check = {}) {
  std::string error;
  try {
    app.parse(argc, argv);
    const std::vector<std::string> extra = app.remaining();
    if (!extra.empty()) Bad("unknown option '" + extra.front() + "'");
    if (check) check();
    return;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    std::exit(0);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--x: 1 required N missing" for an option given last without its value
    error = e.what();
    const size_t colon = error.find(": ");
    if (colon != std::string::npos && error.ends_with(" missing")) error = error.substr(0, colon) + " needs a value";
  } catch (const CLI::ParseError& e) {
    error = e.what();
  }
  std::fprintf(stderr, "%s: %s\n\n%s", app.get_name().c_str(), error.c_str(), app.help().c_str());
  std::exit(usage_status);
}

}  // namespace paam::cli
