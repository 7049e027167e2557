;; Conforms; misbehaves on request so the engine's limits can be tested:
;; input starting with `s` spins forever, `g` grows memory without end, `t` traps
;; (unreachable); anything else is echoed.
(component
  (core module $Limits
    (memory (export "memory") 1)
    (global $next (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $ptr i32)
      (local.set $ptr (global.get $next))
      (global.set $next (i32.add (global.get $next) (local.get 3)))
      (local.get $ptr))
    (func (export "run") (param $ptr i32) (param $len i32) (result i32)
      (local $first i32)
      (if (i32.gt_u (local.get $len) (i32.const 0))
        (then (local.set $first (i32.load8_u (local.get $ptr)))))
      (if (i32.eq (local.get $first) (i32.const 115)) ;; 's'
        (then (loop $spin (br $spin))))
      (if (i32.eq (local.get $first) (i32.const 103)) ;; 'g'
        (then
          (loop $grow
            (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
          (unreachable)))
      (if (i32.eq (local.get $first) (i32.const 116)) ;; 't'
        (then (unreachable)))
      (i32.store (i32.const 16) (local.get $ptr))
      (i32.store (i32.const 20) (local.get $len))
      (i32.const 16)))
  (core instance $limits (instantiate $Limits))
  (func (export "run") (param "input" string) (result string)
    (canon lift (core func $limits "run")
      (memory (core memory $limits "memory")) (realloc (core func $limits "realloc")))))
