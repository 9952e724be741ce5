require "json"

module Rack
  # A handler.
  class Handler < Base
    VERSION = "1.0"
    attr_reader :app

    def initialize(app)
      @app = app
    end

    def self.call(env)
      env
    end

    class << self
      def helper; end
    end

    private

    def secret?; true; end
  end

  class Rack::Other; end
end

def top_level(x) = x * 2
