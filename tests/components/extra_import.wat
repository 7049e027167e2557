;; Refused: besides a Dock function it imports `read-secret`, which is not in the world.
(component
  (import "session-info" (func (result string)))
  (import "read-secret" (func (param "name" string) (result string)))
  (core module $M
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string)
    (canon lift (core func $m "run")
      (memory (core memory $m "memory")) (realloc (core func $m "realloc")))))
