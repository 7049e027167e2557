;; The reference component of the groundskeeper:engine world: it calls all three Dock
;; functions and returns one string built from its input and their three answers.
(component
  (import "session-info" (func $session-info (result string)))
  (import "vfs-query" (func $vfs-query (param "query" string) (result string)))
  (import "run-command" (func $run-command (param "cmdline" string) (result string)))

  ;; Memory and a bump allocator live in their own instance so that the imports can be
  ;; lowered against them before the main module is instantiated.
  (core module $Memory
    (memory (export "memory") 1)
    (global $next (mut i32) (i32.const 1024))
    (func (export "realloc") (param $old i32) (param $old-size i32) (param $align i32)
      (param $size i32) (result i32)
      (local $ptr i32) (local $end i32) (local $have i32)
      ;; round the bump pointer up to the requested alignment
      (local.set $ptr
        (i32.and
          (i32.add (global.get $next) (i32.sub (local.get $align) (i32.const 1)))
          (i32.sub (i32.const 0) (local.get $align))))
      (local.set $end (i32.add (local.get $ptr) (local.get $size)))
      (local.set $have (i32.mul (memory.size) (i32.const 65536)))
      (if (i32.gt_u (local.get $end) (local.get $have))
        (then
          (if (i32.eq
                (memory.grow
                  (i32.div_u
                    (i32.add (i32.sub (local.get $end) (local.get $have)) (i32.const 65535))
                    (i32.const 65536)))
                (i32.const -1))
            (then unreachable))))
      (if (i32.ne (local.get $old-size) (i32.const 0))
        (then (memory.copy (local.get $ptr) (local.get $old) (local.get $old-size))))
      (global.set $next (local.get $end))
      (local.get $ptr)))
  (core instance $memory (instantiate $Memory))

  (core func $session-info-lowered
    (canon lower (func $session-info)
      (memory (core memory $memory "memory")) (realloc (core func $memory "realloc"))))
  (core func $vfs-query-lowered
    (canon lower (func $vfs-query)
      (memory (core memory $memory "memory")) (realloc (core func $memory "realloc"))))
  (core func $run-command-lowered
    (canon lower (func $run-command)
      (memory (core memory $memory "memory")) (realloc (core func $memory "realloc"))))

  (core module $Main
    (import "env" "memory" (memory 1))
    (import "env" "realloc" (func $realloc (param i32 i32 i32 i32) (result i32)))
    (import "dock" "session-info" (func $session-info (param i32)))
    (import "dock" "vfs-query" (func $vfs-query (param i32 i32 i32)))
    (import "dock" "run-command" (func $run-command (param i32 i32 i32)))

    (data (i32.const 64) "state=DONE")        ;; 10 bytes: the vfs query
    (data (i32.const 80) "cat notes.txt")     ;; 13 bytes: the command line
    (data (i32.const 96) "input=")            ;; 6
    (data (i32.const 104) "\0asession=")      ;; 9
    (data (i32.const 116) "\0atasks=")        ;; 7
    (data (i32.const 124) "\0acommand=")      ;; 9
    ;; return areas (ptr, len) of the three calls at 200, 208, 216; of `run` at 224

    ;; copy len bytes from src to dst, return the end of what was written
    (func $put (param $dst i32) (param $src i32) (param $len i32) (result i32)
      (memory.copy (local.get $dst) (local.get $src) (local.get $len))
      (i32.add (local.get $dst) (local.get $len)))

    (func (export "run") (param $input i32) (param $input-len i32) (result i32)
      (local $total i32) (local $out i32) (local $at i32)
      (call $session-info (i32.const 200))
      (call $vfs-query (i32.const 64) (i32.const 10) (i32.const 208))
      (call $run-command (i32.const 80) (i32.const 13) (i32.const 216))
      (local.set $total
        (i32.add
          (i32.add (i32.const 31) (local.get $input-len))
          (i32.add
            (i32.load (i32.const 204))
            (i32.add (i32.load (i32.const 212)) (i32.load (i32.const 220))))))
      (local.set $out
        (call $realloc (i32.const 0) (i32.const 0) (i32.const 1) (local.get $total)))
      (local.set $at (local.get $out))
      (local.set $at (call $put (local.get $at) (i32.const 96) (i32.const 6)))
      (local.set $at (call $put (local.get $at) (local.get $input) (local.get $input-len)))
      (local.set $at (call $put (local.get $at) (i32.const 104) (i32.const 9)))
      (local.set $at
        (call $put (local.get $at) (i32.load (i32.const 200)) (i32.load (i32.const 204))))
      (local.set $at (call $put (local.get $at) (i32.const 116) (i32.const 7)))
      (local.set $at
        (call $put (local.get $at) (i32.load (i32.const 208)) (i32.load (i32.const 212))))
      (local.set $at (call $put (local.get $at) (i32.const 124) (i32.const 9)))
      (local.set $at
        (call $put (local.get $at) (i32.load (i32.const 216)) (i32.load (i32.const 220))))
      (i32.store (i32.const 224) (local.get $out))
      (i32.store (i32.const 228) (local.get $total))
      (i32.const 224)))
  (core instance $main
    (instantiate $Main
      (with "env" (instance $memory))
      (with "dock" (instance
        (export "session-info" (func $session-info-lowered))
        (export "vfs-query" (func $vfs-query-lowered))
        (export "run-command" (func $run-command-lowered))))))

  (func (export "run") (param "input" string) (result string)
    (canon lift (core func $main "run")
      (memory (core memory $memory "memory")) (realloc (core func $memory "realloc")))))
