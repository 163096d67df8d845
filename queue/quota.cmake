# gq_quota: team GPU quota arithmetic (queue/quota.c). Pure and libc only,
# so it links against gq_base alone (STYLE: decide, quota and snapshot
# include no uv, curl, hiredis or jansson). Kept apart from queue/
# CMakeLists.txt (gq_queue, the Redis queue) so decide can use it without
# pulling in hiredis.
add_library(gq_quota STATIC ${CMAKE_CURRENT_LIST_DIR}/quota.c)
target_link_libraries(gq_quota PUBLIC gq_base)
