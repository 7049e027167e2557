;; Refused: a well-formed component of a different world; it exports `greet`, not `run`.
(component
  (core module $M
    (memory (export "memory") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "greet") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "greet") (param "name" string) (result string)
    (canon lift (core func $m "greet")
      (memory (core memory $m "memory")) (realloc (core func $m "realloc")))))
