#pragma once
// Signals and airlock's worker threads. SIGTERM from `airlock stop`, SIGINT,
// SIGHUP and SIGWINCH are the session's to handle, on the thread that runs
// it (cli/attach.h, session/supervisor.h, through a signalfd). The kernel
// hands a process-directed signal to any thread that does not block it, and
// with the default action that ends the whole process, so every worker
// thread (egress proxy, DNS, port publisher, broker, control channel,
// console drain) blocks all signals first.

namespace airlock {

/// Blocks every signal in the calling thread (the first thing a worker
/// thread does).
void blockSignalsInThisThread();

}  // namespace airlock
