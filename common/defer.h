// Defer: run a callable at scope exit unless dismissed — rollback for multi-step setup.
//   Defer undo{[&] { remove_cgroup(); }}; ...; undo.dismiss();
#pragma once

#include <utility>

namespace stockade {

template <class F>
class [[nodiscard]] Defer {
public:
    explicit Defer(F f) noexcept : f_(std::move(f)) {}
    Defer(const Defer&) = delete;
    Defer& operator=(const Defer&) = delete;
    Defer(Defer&&) = delete;
    Defer& operator=(Defer&&) = delete;
    ~Defer() {
        if (armed_) {
            f_();
        }
    }
    void dismiss() noexcept { armed_ = false; }

private:
    F f_;
    bool armed_ = true;
};

}  // namespace stockade
