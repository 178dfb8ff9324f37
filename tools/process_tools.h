// The two tools over the ProcessManager, each defined in its own file; registry.cc lists them.
#pragma once

#include <memory>
#include <vector>

#include "tools/tool.h"

namespace stockade::tools {

std::unique_ptr<Tool> make_bash_tool();     // bash_tool.cc
std::unique_ptr<Tool> make_process_tool();  // process_tool.cc

// bash and process, in tools/list order (they follow the file tools).
std::vector<std::unique_ptr<Tool>> make_process_tools();

}  // namespace stockade::tools
