(* Tiny inventory helpers used by the demo binary. *)
open Printf

(** Raised when a lookup misses. *)
exception Not_stocked of string

(** C binding returning the wall-clock time. *)
external now : unit -> float = "demo_now"

(** An item on the shelf. *)
type item = { name : string; mutable qty : int }

(** Shelf location. *)
type place = Front | Back of int | Hidden

let default_qty = 10

(** Format one item. *)
let show it = sprintf "%s x%d" it.name it.qty

(* Mutually recursive parity check. *)
let rec is_even n = if n = 0 then true else is_odd (n - 1)
and is_odd n = if n = 0 then false else is_even (n - 1)

(** Things that can be ordered. *)
module type ORDERED = sig
  type t
  val compare : t -> t -> int
end

(** Stock table keyed by name. *)
module Stock = struct
  let table : (string, item) Hashtbl.t = Hashtbl.create 16

  (** Insert or replace. *)
  let add it = Hashtbl.replace table it.name it

  module Audit = struct
    let count () = Hashtbl.length table
  end
end

(** Build a max function for any ordered type. *)
module MaxOf (X : ORDERED) = struct
  let max a b = if X.compare a b >= 0 then a else b
end

(** A counter object. *)
class counter start = object
  val mutable n = start
  method incr = n <- n + 1
  method get = n
end

let () = printf "%s\n" (show { name = "pen"; qty = default_qty })
