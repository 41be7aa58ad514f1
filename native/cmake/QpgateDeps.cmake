# Optional and required system libraries. Everything optional is reported by
# qpgate_report_features() at the end of configuration and exposed to JS
# through the addon's `features` object, so a missing library is never silent.
include(CheckIncludeFileCXX)
find_package(Threads REQUIRED)

# CRC-32 for the RoCEv2 ICRC: ISA-L (PCLMUL) when present, zlib otherwise.
find_package(ZLIB REQUIRED)
find_path(ISAL_INCLUDE_DIR isa-l/crc.h)
find_library(ISAL_LIBRARY NAMES isal)
if(ISAL_INCLUDE_DIR AND ISAL_LIBRARY)
  set(QPGATE_HAVE_ISAL ON)
else()
  set(QPGATE_HAVE_ISAL OFF)
endif()
# ISA-L's crc32_gzip_refl measured faster than zlib's crc32 on this hardware
# (bench/icrc); zlib stays the fallback and can be forced for comparison.
if(QPGATE_HAVE_ISAL)
  set(QPGATE_CRC_IMPL "isal" CACHE STRING "CRC-32 implementation for the ICRC: isal or zlib")
else()
  set(QPGATE_CRC_IMPL "zlib" CACHE STRING "CRC-32 implementation for the ICRC: isal or zlib")
endif()

# libnuma: node-local allocation. Without it buffers are placed by first touch.
find_path(NUMA_INCLUDE_DIR numa.h)
find_library(NUMA_LIBRARY NAMES numa)
if(NUMA_INCLUDE_DIR AND NUMA_LIBRARY)
  set(QPGATE_HAVE_NUMA ON)
else()
  set(QPGATE_HAVE_NUMA OFF)
endif()

# libibverbs: the `ibv` backend. Without it only the `soft` backend is built.
# QPGATE_WITH_IBVERBS=OFF builds as if it were absent (the test suite checks
# that path, since CI machines have the library).
option(QPGATE_WITH_IBVERBS "Build the ibv backend when libibverbs is found" ON)
if(QPGATE_WITH_IBVERBS)
  find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  find_library(IBVERBS_LIBRARY NAMES ibverbs)
endif()
if(QPGATE_WITH_IBVERBS AND IBVERBS_INCLUDE_DIR AND IBVERBS_LIBRARY)
  set(QPGATE_HAVE_IBVERBS ON)
else()
  set(QPGATE_HAVE_IBVERBS OFF)
endif()

function(qpgate_report_features)
  message(STATUS "qpgate: ICRC CRC-32 from ${QPGATE_CRC_IMPL}")
  if(QPGATE_HAVE_NUMA)
    message(STATUS "qpgate: libnuma found: engine buffers are allocated on the device's NUMA node")
  else()
    message(STATUS "qpgate: libnuma NOT found: engine buffers are placed by first touch on the pinned CPU")
  endif()
  if(QPGATE_HAVE_IBVERBS)
    message(STATUS "qpgate: libibverbs found: the ibv backend can be built")
  else()
    if(QPGATE_WITH_IBVERBS)
      message(STATUS "qpgate: libibverbs NOT found: building the soft backend only (install libibverbs-dev for the ibv backend)")
    else()
      message(STATUS "qpgate: libibverbs disabled (QPGATE_WITH_IBVERBS=OFF): building the soft backend only")
    endif()
  endif()
endfunction()
