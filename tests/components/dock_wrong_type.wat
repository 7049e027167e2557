;; Refused: imports the Dock function `vfs-query` without its `query` parameter.
(component
  (import "vfs-query" (func (result string)))
  (core module $M
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string)
    (canon lift (core func $m "run")
      (memory (core memory $m "memory")) (realloc (core func $m "realloc")))))
