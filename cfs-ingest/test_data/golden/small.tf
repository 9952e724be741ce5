# Where the logs go.
resource "aws_s3_bucket" "logs" {
  bucket = "example-logs"

  lifecycle {
    prevent_destroy = true
  }
}

/* The region every resource lives in. */
variable "region" {
  type    = string
  default = "eu-west-1"
}

locals {
  tags = { team = "platform" }
}

module "vpc" {
  source = "./modules/vpc"
  cidr   = "10.0.0.0/16"
}

terraform_version = "1.9"
