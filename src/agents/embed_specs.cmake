# Generates a C++ source defining airlock::agents::builtinSpecFiles() from the
# YAML files in SPECS (a ;-list of paths), written to OUTPUT.
# Usage: cmake -DOUTPUT=out.cc "-DSPECS=a.yaml;b.yaml" -P embed_specs.cmake
set(delimiter "airlock_spec")
list(SORT SPECS)
set(body "")
foreach(spec IN LISTS SPECS)
  get_filename_component(file_name "${spec}" NAME)
  file(READ "${spec}" text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${spec} contains the raw string delimiter )${delimiter}\"")
  endif()
  string(APPEND body "    {\"${file_name}\", R\"${delimiter}(${text})${delimiter}\"},\n")
endforeach()
set(source "// Generated from src/agents/builtin/*.yaml by embed_specs.cmake. Do not edit.
#include \"agents/builtin_specs.h\"

namespace airlock::agents {
namespace {

constexpr EmbeddedSpec kSpecs[] = {
${body}};

}  // namespace

std::span<const EmbeddedSpec> builtinSpecFiles() { return kSpecs; }

}  // namespace airlock::agents
")
file(WRITE "${OUTPUT}.tmp" "${source}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
