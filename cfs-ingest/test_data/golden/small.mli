(** A bounded cache of recently used values. *)

(** The keys the cache is indexed by. *)
type key = string

type 'a entry = {
  value : 'a;
  mutable hits : int;
}

type eviction = Oldest | Least_used

exception Full of int

(** [create n] is an empty cache holding at most [n] values. *)
val create : int -> 'a t

val find : 'a t -> key -> 'a option

external now : unit -> float = "cache_now"

(** Orders of keys. *)
module type ORDERED = sig
  type t
  val compare : t -> t -> int
end

module Stats : sig
  (** How often lookups hit. *)
  val hit_rate : 'a t -> float
  val reset : 'a t -> unit
end

module Make (O : ORDERED) : sig
  type key = O.t
  val empty : unit -> key list
end
