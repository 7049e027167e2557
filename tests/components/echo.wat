;; Conforms with no imports at all: `run` returns its input. The parameter is named `text`
;; (not `input`, as in engine.wit) because parameter names are not part of the type.
(component
  (core module $Echo
    (memory (export "memory") 1)
    (global $next (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $ptr i32)
      (local.set $ptr (global.get $next))
      (global.set $next (i32.add (global.get $next) (local.get 3)))
      (local.get $ptr))
    (func (export "run") (param $ptr i32) (param $len i32) (result i32)
      (i32.store (i32.const 16) (local.get $ptr))
      (i32.store (i32.const 20) (local.get $len))
      (i32.const 16)))
  (core instance $echo (instantiate $Echo))
  (func (export "run") (param "text" string) (result string)
    (canon lift (core func $echo "run")
      (memory (core memory $echo "memory")) (realloc (core func $echo "realloc")))))
