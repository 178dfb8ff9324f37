// The five file tools, each defined in its own file; registry.cc lists them for tools/list.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace stockade::tools {

std::unique_ptr<Tool> make_read_tool();
std::unique_ptr<Tool> make_write_tool();
std::unique_ptr<Tool> make_edit_tool();
std::unique_ptr<Tool> make_grep_tool();
std::unique_ptr<Tool> make_glob_tool();

}  // namespace stockade::tools
