;; Refused: a core WebAssembly module (even one exporting `run`) is not a component.
(module
  (memory (export "memory") 1)
  (func (export "run") (param i32 i32) (result i32) (i32.const 0)))
