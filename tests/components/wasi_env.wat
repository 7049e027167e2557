;; Conforms: imports a `wasi:*` interface (always permitted) and no Dock function.
(component
  (import "wasi:cli/environment@0.2.0" (instance
    (export "get-arguments" (func (result (list string))))))
  (core module $M
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (data (i32.const 16) "\20\00\00\00\04\00\00\00")
    (data (i32.const 32) "wasi")
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string)
    (canon lift (core func $m "run")
      (memory (core memory $m "memory")) (realloc (core func $m "realloc")))))
