;; Refused: `run` exists but returns u32 instead of string.
(component
  (core module $M
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param i32 i32) (result i32) (local.get 1)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result u32)
    (canon lift (core func $m "run")
      (memory (core memory $m "memory")) (realloc (core func $m "realloc")))))
