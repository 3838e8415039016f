#include "runtime/exec/continuations.h"

#include <deque>
#include <utility>

namespace rill {
namespace {

struct Continuation {
  Eigen::ThreadPoolInterface* pool;
  std::function<void()> run;
};
thread_local bool t_continuations_active = false;
thread_local std::deque<Continuation> t_continuations;
thread_local bool t_quick_continuations = false;

}  // namespace

void RunHere(std::function<void()> closure) { closure(); }

void RunQuickHere(std::function<void()> closure) {
  QuickContinuationsHere quick;
  closure();
}

QuickContinuationsHere::QuickContinuationsHere() : was_active_(t_quick_continuations) {
  t_quick_continuations = true;
}

QuickContinuationsHere::~QuickContinuationsHere() { t_quick_continuations = was_active_; }

bool QuickContinuationsHere::Active() { return t_quick_continuations; }

InlineContinuations::InlineContinuations() : outermost_(!t_continuations_active) {
  t_continuations_active = true;
}

InlineContinuations::~InlineContinuations() {
  if (!outermost_) return;
  // What these run may queue more (a reply to this thread's partition), or
  // hand the rest off.
  while (!t_continuations.empty()) {
    std::function<void()> run = std::move(t_continuations.front().run);
    t_continuations.pop_front();
    run();
  }
  t_continuations_active = false;
}

bool InlineContinuations::Defer(Eigen::ThreadPoolInterface* pool, std::function<void()> run) {
  if (!t_continuations_active) return false;
  t_continuations.push_back(Continuation{pool, std::move(run)});
  return true;
}

bool InlineContinuations::AnyQueued() { return !t_continuations.empty(); }

void InlineContinuations::HandOff() {
  std::deque<Continuation> kept;
  for (Continuation& c : t_continuations) {
    if (c.pool == nullptr) {
      kept.push_back(std::move(c));
      continue;
    }
    c.pool->Schedule([run = std::move(c.run)] {
      InlineContinuations scope;
      run();
    });
  }
  t_continuations = std::move(kept);
}

}  // namespace rill
