// exports.lockStateDir(dir): one gateway per state.dir (an exclusive flock,
// held until its fd is closed). Node has no flock, so it lives here.
#pragma once

#include <napi.h>

namespace qpgate::addon {

void init_state_lock(Napi::Env env, Napi::Object exports);

}  // namespace qpgate::addon
