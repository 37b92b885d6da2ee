# The header-only libraries of the command-line programs, as interface libraries: paam_cli
# (CLI11: their options) and paam_json (nlohmann-json: the JSON they write). Each is found as an
# installed package (Debian libcli11-dev, nlohmann-json3-dev), else in PAAM_THIRD_PARTY_INCLUDE,
# a folder holding CLI/ and nlohmann/: scripts/vendor_headers.sh copies them into
# build/third_party/include (the default; $PAAM_THIRD_PARTY_INCLUDE overrides it) for a machine
# without the packages. Included by core/CMakeLists.txt.
if(DEFINED ENV{PAAM_THIRD_PARTY_INCLUDE})
  set(_paam_third_party "$ENV{PAAM_THIRD_PARTY_INCLUDE}")
else()
  get_filename_component(_paam_third_party "${CMAKE_CURRENT_LIST_DIR}/../../build/third_party/include" ABSOLUTE)
endif()
set(PAAM_THIRD_PARTY_INCLUDE "${_paam_third_party}" CACHE PATH
    "Folder with CLI/ (CLI11) and nlohmann/ (nlohmann-json), used where their packages are not installed")

# paam_third_party(<our name> <package> <its target> <header> <Debian package>)
function(paam_third_party name package target header debian)
  if(TARGET ${name})
    return()
  endif()
  add_library(${name} INTERFACE)
  set(existed FALSE)
  if(TARGET ${target})
    set(existed TRUE)
  endif()
  find_package(${package} CONFIG QUIET)
  if(TARGET ${target})
    # Global, where this folder made it: ros2/picas_rcl adds core/ and links its programs too.
    if(NOT existed)
      set_target_properties(${target} PROPERTIES IMPORTED_GLOBAL TRUE)
    endif()
    target_link_libraries(${name} INTERFACE ${target})
    message(STATUS "paam: ${package} ${${package}_VERSION} (installed package)")
  elseif(EXISTS "${PAAM_THIRD_PARTY_INCLUDE}/${header}")
    target_include_directories(${name} SYSTEM INTERFACE "${PAAM_THIRD_PARTY_INCLUDE}")
    message(STATUS "paam: ${package} from ${PAAM_THIRD_PARTY_INCLUDE}")
  else()
    message(FATAL_ERROR "paam needs ${package} (${header}): install ${debian}, or run "
                        "scripts/vendor_headers.sh on a machine that has it and carry build/third_party "
                        "(or pass -DPAAM_THIRD_PARTY_INCLUDE=<folder holding ${header}>)")
  endif()
endfunction()

paam_third_party(paam_cli CLI11 CLI11::CLI11 CLI/CLI.hpp libcli11-dev)
paam_third_party(paam_json nlohmann_json nlohmann_json::nlohmann_json nlohmann/json.hpp nlohmann-json3-dev)
