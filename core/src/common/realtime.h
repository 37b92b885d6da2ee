// common/realtime.h — real-time knobs (SCHED_FIFO, CPU affinity, nice), applied when the OS
// permits and reported when not. Nothing here fails hard: callers get a note to print.
#pragma once

#include <string>

namespace paam {

// Pins the calling thread to `cpu` (ignored if cpu < 0). Returns "" or a note saying why not.
std::string PinThisThread(int cpu);
// Lets the calling thread run on every allowed CPU but `cpu` (no-op if cpu < 0 or it is the
// only one). Returns "" or a note.
std::string KeepThisThreadOff(int cpu);
// SCHED_FIFO at `priority` for the calling thread. Returns "" or a note (e.g. EPERM).
std::string SetThisThreadFifo(int priority);
// Sets the calling thread's nice value. Returns "" or a note.
std::string SetThisThreadNice(int nice_value);
// Number of online CPUs.
int OnlineCpus();

}  // namespace paam
