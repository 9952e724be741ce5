#import <Foundation/Foundation.h>
#import "Helpers.h"
#pragma mark - Types
NS_ASSUME_NONNULL_BEGIN

/// Options a job runs with.
typedef NS_OPTIONS(NSUInteger, JobFlags) {
    JobFlagsNone = 0,
    JobFlagsUrgent = 1 << 0,
};

/** Palette of colors used by the renderer. */
typedef enum : NSInteger {
    ColorRed,
    ColorGreen = 5,
} Color;
#define WORKER_DEBUG 1

static const NSInteger kMaxRetries = 3;
/// Something that can be started.
@protocol Runnable <NSObject>
- (void)start;
@optional
- (BOOL)canStartWithDelay:(double)delay;
@end
/** A small worker object. */
@interface Worker : NSObject <Runnable>
@property (nonatomic, copy) NSString *name;
@property (nonatomic, assign) NSInteger count;
- (void)run;
+ (instancetype)shared;
- (void)setValue:(id)v forKey:(NSString *)k;
@end

@interface Worker (Extra)
- (NSString *)summary;
@end
/// Adds two integers.
int add_ints(int a, int b) {
    return a + b;
}

@implementation Worker
#pragma mark - Lifecycle

/** Returns the singleton worker. */
+ (instancetype)shared {
    static Worker *instance = nil;
    return instance;
}

// Starts the job.
- (void)run {
    self.count += 1;
}

- (void)setValue:(id)v forKey:(NSString *)k {
    NSLog(@"%@ = %@", k, v);
}

@end

@implementation Worker (Extra)
- (NSString *)summary {
    return [NSString stringWithFormat:@"%@ (%ld)", self.name, (long)self.count];
}
@end
NS_ASSUME_NONNULL_END
