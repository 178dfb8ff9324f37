# stockade_sandbox_test(NAME integration_run_test SRCS run_test.cc LABELS integration)
#
# One gtest binary that drives the real stockade binary, registered twice (not discovered per
# test: every case needs the sandbox anyway, and the binary is what as_user.sh hands over):
#   <NAME>.root  as_user.sh root <binary>   skipped (77) unless ctest runs as root
#   <NAME>.user  as_user.sh user <binary>   as root: copied and run as the `stockade-test` user
# Building the test builds stockade and the probe it runs.
include_guard(GLOBAL)

function(stockade_sandbox_test)
    cmake_parse_arguments(ARG "" "NAME" "SRCS;LABELS" ${ARGN})
    add_executable(${ARG_NAME} ${ARG_SRCS})
    target_link_libraries(${ARG_NAME} PRIVATE stockade::testing GTest::gmock GTest::gtest_main)
    stockade_apply_flags(${ARG_NAME})
    add_dependencies(${ARG_NAME} stockade stockade-probe)
    foreach(mode root user)
        add_test(NAME ${ARG_NAME}.${mode}
                 COMMAND sh ${PROJECT_SOURCE_DIR}/tests/testing/as_user.sh ${mode}
                         $<TARGET_FILE:${ARG_NAME}>)
        set_tests_properties(${ARG_NAME}.${mode} PROPERTIES
            LABELS "${ARG_LABELS}"
            SKIP_RETURN_CODE 77
            TIMEOUT 300
            ENVIRONMENT "STOCKADE_BIN=$<TARGET_FILE:stockade>;STOCKADE_PROBE=$<TARGET_FILE:stockade-probe>")
    endforeach()
endfunction()
