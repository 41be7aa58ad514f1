// The verbs interface from JS (src/native/verbs.ts types it): openDevice on
// an Engine gives a Device of either backend (device_open.h); its PDs, CQs, QPs, MRs, AHs and SRQs are JS
// objects over the C++ verbs objects.
//
// Threads: every verbs object belongs to the engine thread, so every call
// converts its JS arguments on the JS thread, runs the verbs operation on
// the engine thread through Engine::run_on_engine (synchronously: the call
// returns when it has run; inline when the engine is not running), and
// converts the result back. That is the control path; it costs a doorbell
// and a wake-up per call when the engine is parked.
//
// Errors: a verbs Error becomes a JS Error whose message is the verbs
// message and whose `code` is the errno name ("EINVAL"); a failed post adds
// `badWrIndex`. Malformed arguments are TypeErrors naming the field.
//
// Lifetime: each JS object owns its verbs object; destroy()/dereg()/close()
// release it at once, and the finalizer releases it otherwise (on the
// engine thread). Verbs objects keep alive what they were made from, so JS
// may drop them in any order. A memory region holds a reference to the JS
// buffer it registered, so the memory stays valid while registered.
#pragma once

#include <napi.h>

namespace qpgate::addon {

struct VerbsClasses {
  Napi::FunctionReference device;
  Napi::FunctionReference pd;
  Napi::FunctionReference cq;
  Napi::FunctionReference qp;
  Napi::FunctionReference mr;
  Napi::FunctionReference ah;
  Napi::FunctionReference srq;
};

// Adds openDevice(engine, options), bufferAddress(buffer) and the classes to
// `exports`. `classes` is owned by the addon instance and outlives every call.
void init_verbs(Napi::Env env, Napi::Object exports, VerbsClasses* classes);

}  // namespace qpgate::addon

namespace qpgate::verbs {
class Device;
}

namespace qpgate::addon {

// For other bindings (feed_wrap): the verbs::Device behind a JS Device
// made by openDevice, or nullptr (anything else, or a closed device).
verbs::Device* device_of(Napi::Value value, const VerbsClasses& classes);
// The same, or args.h's TypeError "<where> must be an open Device from verbs.openDevice(), got ...".
verbs::Device& device_arg(Napi::Env env, Napi::Value value, const VerbsClasses& classes, const std::string& where);

}  // namespace qpgate::addon
