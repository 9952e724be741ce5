#' Clamp a value into a range.
#'
#' @param x A number.
#' @return The clamped number.
clamp <- function(x, lo = 0, hi = 1) {
  min(max(x, lo), hi)
}

# A plain helper, assigned with =.
square = function(x) x^2

MAX_ITEMS <- 50L

#' An account class.
Account <- setRefClass("Account",
  fields = list(balance = "numeric"),
  methods = list(
    deposit = function(x) {
      balance <<- balance + x
    }
  )
)

setGeneric("area", function(shape) standardGeneric("area"))

setMethod("area", "Circle", function(shape) pi * shape@r^2)

utils$describe <- function(x) paste("value", x)

function(y) y
