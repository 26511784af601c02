// SPDX-License-Identifier: MIT
// The probe matrix as C++ (RAII SP_SCOPE, namespaces, C++ casts).
#include "probe_matrix.c"
