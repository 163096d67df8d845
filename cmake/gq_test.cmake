# gq_add_test(<name> LABEL <unit|integ|scenario> SOURCES <src...> [LIBS <lib...>]
#             [TIMEOUT <seconds>])
#
# One executable per tested module (STYLE: tests/unit/<dir>/test_<file>.c),
# built into build/tests/ and registered with ctest under its label. Tests run
# from the source root so that fixture paths are relative to the repository.
function(gq_add_test name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    message(FATAL_ERROR "gq_add_test(${name}): LABEL is required")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  target_compile_definitions(${name} PRIVATE
    GQ_SOURCE_DIR="${CMAKE_SOURCE_DIR}" GQ_BINARY_DIR="${CMAKE_BINARY_DIR}")
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT})
endfunction()
