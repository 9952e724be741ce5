<?php
declare(strict_types=1);

namespace Monolog\Handler;

use Monolog\Logger;

/**
 * Streams records.
 */
#[Attr]
final class StreamHandler extends AbstractHandler implements Foo
{
    public const MAX = 10;
    protected ?string $url = null, $other;

    public function __construct(string $url) { $this->url = $url; }

    /** Writes. */
    protected function write(array $record): void {}
}

interface Formatter { public function format(array $r); }
trait Loggable { function log() {} }
enum Level: int { case Debug = 100; public function name(): string { return ''; } }
function helper(int $x): int { return $x; }
const TOP = 1;
