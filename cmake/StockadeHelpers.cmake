# Module helpers in the style of abseil's: one library per top-level folder, tests beside them.

set(STOCKADE_WARNINGS
    -Wall -Wextra -Werror -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual
    -Wconversion -Wsign-conversion -Wnull-dereference -Wformat=2 -Wimplicit-fallthrough)
set(STOCKADE_HARDENING -fstack-protector-strong -fPIE -ffunction-sections -fdata-sections)
set(STOCKADE_LINK_HARDENING -pie -Wl,-z,relro,-z,now,-z,noexecstack)

add_compile_definitions($<$<NOT:$<CONFIG:Debug>>:_FORTIFY_SOURCE=2> $<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>
                        SPDLOG_FMT_EXTERNAL
                        $<$<CONFIG:Debug>:SPDLOG_ACTIVE_LEVEL=SPDLOG_LEVEL_TRACE>
                        $<$<NOT:$<CONFIG:Debug>>:SPDLOG_ACTIVE_LEVEL=SPDLOG_LEVEL_DEBUG>)
if(STOCKADE_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
endif()

function(stockade_apply_flags target)
    target_compile_options(${target} PRIVATE ${STOCKADE_WARNINGS} ${STOCKADE_HARDENING})
    target_link_options(${target} PRIVATE ${STOCKADE_LINK_HARDENING})
endfunction()

# The dependency rule (DESIGN.md §2): common <- policy, workspace, sandbox <- tools <- runner;
# images uses sandbox; network (the sandboxes' proxy) uses common. runner/ is four modules, one
# floor each: mcp (the protocol) <- session (the engine) <- host (tenants) <- cli (the verbs).
# Beside them, worker (runner/worker) is the session worker's executable: it runs in the
# sandbox, linked static-pie, so it uses the worker's service loop (workspace), the launcher's
# fd contract (sandbox/spec.h) and common, and nothing of the supervisor; session (which carries
# it) and the floors above may use it.
# STOCKADE_MAY_USE_<module> lists the modules whose headers it may include (all of them, the
# ones its dependencies bring included); STOCKADE_FOLDER_<module> is its folder when that is not
# its name.
set(STOCKADE_MAY_USE_common "")
set(STOCKADE_MAY_USE_network common)
set(STOCKADE_MAY_USE_policy common)
set(STOCKADE_MAY_USE_workspace common)
set(STOCKADE_MAY_USE_sandbox common)
set(STOCKADE_MAY_USE_images sandbox common)
set(STOCKADE_MAY_USE_tools policy workspace sandbox common)
set(STOCKADE_MAY_USE_worker workspace sandbox common)
set(STOCKADE_MAY_USE_mcp tools policy workspace sandbox network common)
set(STOCKADE_MAY_USE_session mcp tools images policy workspace sandbox network worker common)
set(STOCKADE_MAY_USE_host session mcp tools images policy workspace sandbox network worker common)
set(STOCKADE_MAY_USE_cli host session mcp tools images policy workspace sandbox network worker
    common)
foreach(module mcp session host cli worker)
    set(STOCKADE_FOLDER_${module} runner/${module})
endforeach()

# stockade_module_folder(module OUT): the module's folder, relative to the project root.
function(stockade_module_folder module out_var)
    if(DEFINED STOCKADE_FOLDER_${module})
        set(${out_var} ${STOCKADE_FOLDER_${module}} PARENT_SCOPE)
    else()
        set(${out_var} ${module} PARENT_SCOPE)
    endif()
endfunction()

# stockade_include_view(module OUT_DIR): a directory holding a link to the module's own folder
# and to each folder it may use, and nothing else. A module compiles with its view, not the
# project root, as its include path: an #include past the rule does not compile.
function(stockade_include_view module out_var)
    set(view ${PROJECT_BINARY_DIR}/include-view/${module})
    file(MAKE_DIRECTORY ${view})
    foreach(used ${module} ${STOCKADE_MAY_USE_${module}})
        stockade_module_folder(${used} folder)
        if(NOT EXISTS ${view}/${folder})
            get_filename_component(parent ${view}/${folder} DIRECTORY)
            file(MAKE_DIRECTORY ${parent})
            file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${view}/${folder} SYMBOLIC)
        endif()
    endforeach()
    set(${out_var} ${view} PARENT_SCOPE)
endfunction()

# stockade_library(NAME sandbox SRCS a.cc b.cc DEPS stockade::common)
# A stockade:: dependency outside STOCKADE_MAY_USE_<NAME> is a configure error.
function(stockade_library)
    cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
    if(NOT DEFINED STOCKADE_MAY_USE_${ARG_NAME})
        message(FATAL_ERROR "module ${ARG_NAME} is not in the dependency rule (cmake/StockadeHelpers.cmake)")
    endif()
    foreach(dep ${ARG_DEPS})
        if(dep MATCHES "^stockade::(.*)$" AND NOT CMAKE_MATCH_1 IN_LIST STOCKADE_MAY_USE_${ARG_NAME})
            message(FATAL_ERROR "${ARG_NAME} may not depend on ${dep} (DESIGN.md §2)")
        endif()
    endforeach()
    add_library(stockade_${ARG_NAME} STATIC ${ARG_SRCS})
    add_library(stockade::${ARG_NAME} ALIAS stockade_${ARG_NAME})
    stockade_include_view(${ARG_NAME} view)
    target_include_directories(stockade_${ARG_NAME} PUBLIC ${view})
    target_link_libraries(stockade_${ARG_NAME} PUBLIC ${ARG_DEPS})
    stockade_apply_flags(stockade_${ARG_NAME})
endfunction()

# stockade_test(NAME common_result_test SRCS result_test.cc DEPS stockade::common LABELS unit)
function(stockade_test)
    cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
    add_executable(${ARG_NAME} ${ARG_SRCS})
    target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} stockade::testing GTest::gmock GTest::gtest_main)
    stockade_apply_flags(${ARG_NAME})
    # g++ 12 at -O2 reports false null dereferences inside libstdc++'s streams in test code.
    target_compile_options(${ARG_NAME} PRIVATE -Wno-null-dereference)
    gtest_discover_tests(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()

# stockade_fuzzer(NAME fuzz_parse_size SRCS parse_size_fuzz.cc DEPS stockade::common CORPUS dir)
# With STOCKADE_FUZZ (clang) it links libFuzzer; otherwise it links a replay main() and ctest
# replays every file of the corpus through the target.
function(stockade_fuzzer)
    cmake_parse_arguments(ARG "" "NAME;CORPUS" "SRCS;DEPS" ${ARGN})
    add_executable(${ARG_NAME} ${ARG_SRCS})
    target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
    stockade_apply_flags(${ARG_NAME})
    if(STOCKADE_FUZZ)
        target_compile_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
        target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
        add_dependencies(stockade_fuzzers ${ARG_NAME})
    else()
        target_sources(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.cc)
        add_test(NAME ${ARG_NAME}_replay COMMAND ${ARG_NAME} ${ARG_CORPUS})
        set_tests_properties(${ARG_NAME}_replay PROPERTIES LABELS "unit;fuzz")
    endif()
endfunction()
