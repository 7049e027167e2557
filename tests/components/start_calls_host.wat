;; Refused (`run` has the wrong type), and its core start function calls `session-info`
;; while being instantiated: the engine must refuse it before instantiation, so the host
;; function is never called.
(component
  (import "session-info" (func $session-info (result string)))
  (core module $Memory
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024)))
  (core instance $memory (instantiate $Memory))
  (core func $session-info-lowered
    (canon lower (func $session-info)
      (memory (core memory $memory "memory")) (realloc (core func $memory "realloc"))))
  (core module $Main
    (import "dock" "session-info" (func $session-info (param i32)))
    (func $start (call $session-info (i32.const 0)))
    (start $start)
    (func (export "run") (param i32) (result i32) (local.get 0)))
  (core instance $main
    (instantiate $Main
      (with "dock" (instance (export "session-info" (func $session-info-lowered))))))
  (func (export "run") (param "input" u32) (result u32)
    (canon lift (core func $main "run"))))
